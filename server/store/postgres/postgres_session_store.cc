// The PostgreSQL store's connections, schema and transactions (the writes:
// postgres_store_writes.cc; the reads: postgres_store_load.cc).
#include "server/store/postgres/postgres_session_store.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/store/postgres/pg_conn.h"

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

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

PostgresSessionStore::PostgresSessionStore(std::string uri, Durability durability)
    : uri_(std::move(uri)), durability_(durability) {}

PostgresSessionStore::~PostgresSessionStore() = default;

absl::StatusOr<std::unique_ptr<PostgresSessionStore>> PostgresSessionStore::Open(
    const std::string& uri, Durability durability) {
  std::unique_ptr<PostgresSessionStore> store(new PostgresSessionStore(uri, durability));
  absl::StatusOr<std::unique_ptr<pg::Conn>> c = pg::Conn::Connect(uri);
  if (!c.ok()) return c.status();
  if (absl::Status s = store->CreateSchema(**c); !s.ok()) return s;
  absl::MutexLock lock(&store->pool_mu_);
  store->idle_.push_back(*std::move(c));
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
    return c.Exec("closing the schema", "COMMIT").status();
  }
  if (absl::StatusOr<pg::Result> r = c.Exec("creating the schema", kSchemaSql); !r.ok()) {
    return fail(r.status());
  }
  const std::string insert =
      absl::StrCat("INSERT INTO f2obo_schema (version) VALUES (", kSchemaVersion, ")");
  if (absl::StatusOr<pg::Result> r = c.Exec("creating the schema", insert.c_str()); !r.ok()) {
    return fail(r.status());
  }
  return c.Exec("creating the schema", "COMMIT").status();
}

absl::StatusOr<std::unique_ptr<pg::Conn>> PostgresSessionStore::Acquire(Deadline deadline) {
  std::unique_ptr<pg::Conn> c;
  {
    absl::MutexLock lock(&pool_mu_);
    const auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(pool_mu_) {
      return !idle_.empty() || lent_ < kConnections;
    };
    if (deadline == kNoDeadline) {
      pool_mu_.Await(absl::Condition(&room));
    } else if (!pool_mu_.AwaitWithDeadline(absl::Condition(&room), absl::FromChrono(deadline))) {
      return absl::DeadlineExceededError(
          "deadline passed waiting for the PostgreSQL store (not written)");
    }
    ++lent_;
    if (!idle_.empty()) {
      c = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (c != nullptr && !c->broken()) return c;
  // None yet, or one that broke: a new connection (through a multi-host
  // URI, to whichever server is the primary now).
  absl::StatusOr<std::unique_ptr<pg::Conn>> made = pg::Conn::Connect(uri_);
  absl::MutexLock lock(&pool_mu_);
  if (!made.ok()) {
    --lent_;
    return absl::UnavailableError(absl::StrCat(made.status().message(), " (not written: retry)"));
  }
  if (c != nullptr) ++broken_;
  if (broken_ > 0) {  // this one replaces a broken one
    --broken_;
    reconnects_.fetch_add(1);
  }
  return made;
}

void PostgresSessionStore::Release(std::unique_ptr<pg::Conn> c) {
  absl::MutexLock lock(&pool_mu_);
  --lent_;
  if (c == nullptr) return;
  if (c->broken()) {
    ++broken_;
  } else {
    idle_.push_back(std::move(c));
  }
}

absl::Status PostgresSessionStore::Transact(absl::string_view what, Deadline deadline, bool sync,
                                            const Body& body, const ReadBack& read_back,
                                            bool grows) {
  const auto start = std::chrono::steady_clock::now();
  if (std::chrono::system_clock::now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("deadline passed before ", what));
  }
  std::unique_ptr<pg::Conn> c;
  absl::Status s;
  // A pooled connection that died with its server (a restart, a failover)
  // is only found dead when used: if BEGIN finds it so, nothing was sent,
  // and the transaction starts again on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = Acquire(deadline);
    if (!acquired.ok()) return acquired.status();
    c = *std::move(acquired);
    s = c->Exec(what, "BEGIN").status();
    if (s.ok() || !c->broken()) break;
    Release(std::move(c));
  }
  if (c == nullptr) return s;
  if (s.ok() && grows) s = CheckSize(*c);
  if (s.ok() && !sync) s = c->Exec(what, "SET LOCAL synchronous_commit = off").status();
  if (s.ok()) s = body(*c);
  if (!s.ok()) {
    if (!c->broken()) (void)c->Exec("rolling back", "ROLLBACK");
    Release(std::move(c));
    return s;
  }
  absl::StatusOr<pg::Result> committed = c->Exec(what, "COMMIT");
  if (committed.ok() || !c->broken()) {
    Release(std::move(c));
    if (committed.ok()) {
      CommitObserved(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return committed.status();
  }
  // The connection broke during COMMIT: stored or not, only the database
  // knows.  Asked on a new connection (the write is either all there or
  // not at all).
  Release(std::move(c));
  commits_read_back_.fetch_add(1);
  absl::StatusOr<std::unique_ptr<pg::Conn>> again = Acquire(deadline);
  absl::StatusOr<bool> stored =
      again.ok() ? read_back(**again) : absl::StatusOr<bool>(again.status());
  if (again.ok()) Release(*std::move(again));
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
