// The PostgreSQL store's connections, schema and transactions (the writes:
// postgres_store_writes.cc; the reads: postgres_store_load.cc).
#include "server/store/postgres/postgres_session_store.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/pg_pool.h"

namespace f2obo::server {

namespace {

// Serializes schema creation among servers opening one database at once.
constexpr const char* kSchemaLockSql = "SELECT pg_advisory_xact_lock(7318902245)";

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE f2obo_schema (version integer NOT NULL);
CREATE TABLE f2obo_sessions (
  id text PRIMARY KEY, spec bytea NOT NULL, spec_sum bigint NOT NULL,
  state bytea NOT NULL, state_sum bigint NOT NULL,
  parts bigint,  -- the state's aux part count (state is its head); NULL: state is whole
  next_t bigint NOT NULL);
CREATE TABLE f2obo_state_parts (
  id text NOT NULL, idx bigint NOT NULL, part bytea NOT NULL, part_sum bigint NOT NULL,
  PRIMARY KEY (id, idx));
CREATE TABLE f2obo_replies (
  id text NOT NULL, t bigint NOT NULL, reply bytea NOT NULL, reply_sum bigint NOT NULL,
  PRIMARY KEY (id, t));
CREATE TABLE f2obo_checkpoints (
  id text NOT NULL, t bigint NOT NULL, state bytea NOT NULL, state_sum bigint NOT NULL,
  parts bigint,  -- as f2obo_sessions.parts
  PRIMARY KEY (id, t));
CREATE TABLE f2obo_checkpoint_parts (
  id text NOT NULL, t bigint NOT NULL, idx bigint NOT NULL, part bytea NOT NULL,
  part_sum bigint NOT NULL, PRIMARY KEY (id, t, idx));
CREATE TABLE f2obo_groups (
  id text PRIMARY KEY, members bytea NOT NULL, members_sum bigint NOT NULL);
CREATE TABLE f2obo_fences (
  key text PRIMARY KEY, target text NOT NULL, target_sum bigint NOT NULL);
)sql";

// Version 2 over version 1: the write versions and the step as one
// statement.  Old rows get version 0; every write from now on a new value.
constexpr const char* kVersion2Sql = R"sql(
CREATE SEQUENCE f2obo_gen;
ALTER TABLE f2obo_sessions ADD COLUMN gen bigint NOT NULL DEFAULT 0;
-- A step of one session, compare-and-set from (p_t - 1, p_gen; p_gen NULL:
-- not compared): its row, its parts (p_clear: every stored part removed
-- first; p_trim_from: those at or beyond it; then each of p_idx stored, or
-- removed if its bytes are empty), its reply (the cache keeps the keys in
-- (p_t - p_keep_replies, p_t]).  Returns the new write version, NULL if the
-- session is not stored at (p_t - 1, p_gen) (nothing written).
CREATE FUNCTION f2obo_step(p_id text, p_t bigint, p_gen bigint, p_head bytea, p_head_sum bigint,
    p_parts bigint, p_clear boolean, p_trim_from bigint, p_idx bigint[], p_part bytea[],
    p_part_sum bigint[], p_reply bytea, p_reply_sum bigint, p_keep_replies bigint,
    p_sync boolean) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
  g bigint;
BEGIN
  IF NOT p_sync THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  UPDATE f2obo_sessions SET state = p_head, state_sum = p_head_sum, parts = p_parts,
         next_t = p_t, gen = nextval('f2obo_gen')
   WHERE id = p_id AND next_t = p_t - 1 AND (p_gen IS NULL OR gen = p_gen)
  RETURNING gen INTO g;
  IF g IS NULL THEN
    RETURN NULL;
  END IF;
  IF p_clear THEN
    DELETE FROM f2obo_state_parts WHERE id = p_id;
  ELSIF p_trim_from IS NOT NULL THEN
    DELETE FROM f2obo_state_parts WHERE id = p_id AND idx >= p_trim_from;
  END IF;
  IF cardinality(p_idx) > 0 THEN
    DELETE FROM f2obo_state_parts s USING unnest(p_idx, p_part) AS u(idx, part)
     WHERE s.id = p_id AND s.idx = u.idx AND length(u.part) = 0;
    INSERT INTO f2obo_state_parts (id, idx, part, part_sum)
    SELECT p_id, u.idx, u.part, u.part_sum
      FROM unnest(p_idx, p_part, p_part_sum) AS u(idx, part, part_sum)
     WHERE length(u.part) > 0
    ON CONFLICT (id, idx) DO UPDATE SET part = EXCLUDED.part, part_sum = EXCLUDED.part_sum;
  END IF;
  INSERT INTO f2obo_replies (id, t, reply, reply_sum) VALUES (p_id, p_t, p_reply, p_reply_sum)
  ON CONFLICT (id, t) DO UPDATE SET reply = EXCLUDED.reply, reply_sum = EXCLUDED.reply_sum;
  DELETE FROM f2obo_replies WHERE id = p_id AND t <= p_t - p_keep_replies;
  RETURN g;
END $f$;
)sql";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PostgresSessionStore::PostgresSessionStore(std::string uri, Durability durability)
    : durability_(durability), pool_(std::move(uri), kConnections) {}

PostgresSessionStore::~PostgresSessionStore() = default;

absl::StatusOr<std::unique_ptr<PostgresSessionStore>> PostgresSessionStore::Open(
    const std::string& uri, Durability durability) {
  std::unique_ptr<PostgresSessionStore> store(new PostgresSessionStore(uri, durability));
  absl::StatusOr<std::unique_ptr<pg::Conn>> c = pg::Conn::Connect(uri);
  if (!c.ok()) return c.status();
  if (absl::Status s = store->CreateSchema(**c); !s.ok()) return s;
  store->pool_.Add(*std::move(c));
  return store;
}

absl::Status PostgresSessionStore::CreateSchema(pg::Conn& c) {
  const auto fail = [&](absl::Status s) {
    (void)c.Exec("rolling back", "ROLLBACK");
    return s;
  };
  for (const char* sql : {"BEGIN", kSchemaLockSql}) {
    if (absl::StatusOr<pg::Result> r = c.Exec("opening the schema", sql); !r.ok()) {
      return fail(r.status());
    }
  }
  absl::StatusOr<pg::Result> exists = c.Run(
      "reading the schema version", "SELECT (to_regclass('f2obo_schema') IS NOT NULL)::int::int8");
  if (!exists.ok()) return fail(exists.status());
  if (exists->Int(0, 0) == 1) {
    absl::StatusOr<pg::Result> v =
        c.Run("reading the schema version", "SELECT max(version)::bigint FROM f2obo_schema");
    if (!v.ok()) return fail(v.status());
    const int64_t version = v->rows() > 0 && !v->IsNull(0, 0) ? v->Int(0, 0) : 0;
    if (version > kSchemaVersion) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat("the PostgreSQL store (", c.server(), ") holds schema version ", version,
                       ", written by a newer f2obo-server; this one reads up to version ",
                       kSchemaVersion, ": upgrade the server (nothing was written)")));
    }
    if (version < 1) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "the PostgreSQL store (", c.server(), ") has table f2obo_schema without a version")));
    }
    if (absl::Status s = Migrate(c, version); !s.ok()) return fail(s);
    return c.Exec("closing the schema", "COMMIT").status();
  }
  // A new database: version 1's tables, migrated as an old one is (one
  // path to the current schema).
  if (absl::StatusOr<pg::Result> r = c.Exec("creating the schema", kSchemaSql); !r.ok()) {
    return fail(r.status());
  }
  if (absl::StatusOr<pg::Result> r =
          c.Exec("creating the schema", "INSERT INTO f2obo_schema (version) VALUES (1)");
      !r.ok()) {
    return fail(r.status());
  }
  if (absl::Status s = Migrate(c, 1); !s.ok()) return fail(s);
  return c.Exec("creating the schema", "COMMIT").status();
}

absl::Status PostgresSessionStore::Migrate(pg::Conn& c, int64_t version) {
  if (version >= kSchemaVersion) return absl::OkStatus();
  if (version < 2) {
    if (absl::StatusOr<pg::Result> r = c.Exec("migrating the schema to version 2", kVersion2Sql);
        !r.ok()) {
      return r.status();
    }
  }
  const std::string set = absl::StrCat("UPDATE f2obo_schema SET version = ", kSchemaVersion);
  return c.Exec("migrating the schema", set.c_str()).status();
}

absl::Status PostgresSessionStore::Transact(absl::string_view what, Deadline deadline, bool sync,
                                            const Body& body, const ReadBack& read_back, bool grows,
                                            bool one_statement) {
  const auto start = std::chrono::steady_clock::now();
  if (std::chrono::system_clock::now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("deadline passed before ", what));
  }
  if (one_statement) return TransactOne(what, deadline, body, read_back, grows, start);
  std::unique_ptr<pg::Conn> c;
  absl::Status s;
  // A pooled connection that died with its server (a restart, a failover)
  // is only found dead when used: if BEGIN finds it so, nothing was sent,
  // and the transaction starts again on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(deadline);
    if (!acquired.ok()) return acquired.status();
    c = *std::move(acquired);
    s = c->Exec(what, "BEGIN").status();
    if (s.ok() || !c->broken()) break;
    pool_.Release(std::move(c));
  }
  if (c == nullptr) return s;
  if (s.ok() && grows) s = CheckSize(*c);
  if (s.ok() && !sync) s = c->Exec(what, "SET LOCAL synchronous_commit = off").status();
  if (s.ok()) s = body(*c);
  if (!s.ok()) {
    if (!c->broken()) (void)c->Exec("rolling back", "ROLLBACK");
    pool_.Release(std::move(c));
    return s;
  }
  absl::StatusOr<pg::Result> committed = c->Exec(what, "COMMIT");
  if (committed.ok() || !c->broken()) {
    pool_.Release(std::move(c));
    if (committed.ok()) {
      CommitObserved(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return committed.status();
  }
  // The connection broke during COMMIT: stored or not, only the database
  // knows.  Asked on a new connection (the write is either all there or
  // not at all).
  pool_.Release(std::move(c));
  absl::StatusOr<bool> stored = ReadBackOnNewConnection(read_back, deadline);
  if (!stored.ok()) {
    return absl::UnavailableError(
        absl::StrCat("PostgreSQL store, ", what,
                     ": the connection broke during COMMIT and the outcome could "
                     "not be read back (",
                     stored.status().message(), "); retry"));
  }
  if (*stored) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("PostgreSQL store, ", what,
                                             ": the connection broke during COMMIT; not "
                                             "stored (read back): retry"));
}

absl::StatusOr<bool> PostgresSessionStore::ReadBackOnNewConnection(const ReadBack& read_back,
                                                                   Deadline deadline) {
  commits_read_back_.fetch_add(1);
  absl::StatusOr<std::unique_ptr<pg::Conn>> again = pool_.Acquire(deadline);
  if (!again.ok()) return again.status();
  absl::StatusOr<bool> stored = read_back(**again);
  pool_.Release(*std::move(again));
  return stored;
}

absl::Status PostgresSessionStore::TransactOne(absl::string_view what, Deadline deadline,
                                               const Body& body, const ReadBack& read_back,
                                               bool grows,
                                               std::chrono::steady_clock::time_point start) {
  // The statement commits on its own; a connection that breaks while it
  // runs leaves its outcome unknown (it may have committed): read back on
  // a new connection.  Not stored: run again there, once (a pooled
  // connection that died with its server is only found dead when used).
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(deadline);
    if (!acquired.ok()) return acquired.status();
    std::unique_ptr<pg::Conn> c = *std::move(acquired);
    absl::Status s = grows ? CheckSize(*c) : absl::OkStatus();
    if (s.ok()) s = body(*c);
    if (s.ok() || !c->broken()) {
      pool_.Release(std::move(c));
      if (s.ok()) {
        CommitObserved(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return s;
    }
    pool_.Release(std::move(c));
    absl::StatusOr<bool> stored = ReadBackOnNewConnection(read_back, deadline);
    if (!stored.ok()) {
      return absl::UnavailableError(
          absl::StrCat("PostgreSQL store, ", what,
                       ": the connection broke and the outcome could not be read back (",
                       stored.status().message(), "); retry"));
    }
    if (*stored) return absl::OkStatus();
    if (attempt > 0) {
      return absl::UnavailableError(absl::StrCat(
          "PostgreSQL store, ", what, ": the connection broke; not stored (read back): retry"));
    }
  }
}

std::optional<int64_t> PostgresSessionStore::KnownGen(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  const auto it = gens_.find(id);
  if (it == gens_.end()) return std::nullopt;
  return it->second;
}

void PostgresSessionStore::NoteGen(const std::string& id, int64_t gen) {
  absl::MutexLock lock(&mu_);
  gens_[id] = gen;
}

void PostgresSessionStore::ForgetGen(const std::string& id) {
  absl::MutexLock lock(&mu_);
  gens_.erase(id);
}

absl::Status PostgresSessionStore::LimitSize(int64_t max_bytes) {
  absl::MutexLock lock(&mu_);
  max_bytes_ = max_bytes;
  size_checked_ms_ = 0;
  over_size_ = false;
  return absl::OkStatus();
}

absl::Status PostgresSessionStore::CheckSize(pg::Conn& c) {
  int64_t cap;
  {
    absl::MutexLock lock(&mu_);
    cap = max_bytes_;
    if (cap <= 0) return absl::OkStatus();
    if (NowMs() - size_checked_ms_ < 1000) {
      return over_size_ ? absl::ResourceExhaustedError(absl::StrCat(
                              "the PostgreSQL store is at its cap (--max_store_bytes ", cap, ")"))
                        : absl::OkStatus();
    }
  }
  absl::StatusOr<pg::Result> r =
      c.Run("reading the store's size", "SELECT pg_database_size(current_database())::bigint");
  if (!r.ok()) return r.status();
  const int64_t size = r->Int(0, 0);
  absl::MutexLock lock(&mu_);
  size_checked_ms_ = NowMs();
  over_size_ = size >= cap;
  if (over_size_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the PostgreSQL store holds ", size, " bytes, at its cap (--max_store_bytes ", cap, ")"));
  }
  return absl::OkStatus();
}

bool PostgresSessionStore::NeedsCompleteState(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return needs_complete_.count(id) > 0;
}

void PostgresSessionStore::NoteStepOutcome(const std::vector<std::string>& ids,
                                           const absl::Status& s) {
  // A write that failed in the database may have left the stored parts
  // behind the caller's; one refused before anything was written (the
  // compare-and-set, a deadline, the chain rule) did not.
  const bool failed = absl::IsUnavailable(s) || absl::IsInternal(s) ||
                      absl::IsResourceExhausted(s) || absl::IsDataLoss(s);
  if (!s.ok() && !failed) return;
  absl::MutexLock lock(&mu_);
  for (const std::string& id : ids) {
    if (failed) {
      needs_complete_.insert(id);
    } else {
      needs_complete_.erase(id);
    }
  }
}

}  // namespace f2obo::server
