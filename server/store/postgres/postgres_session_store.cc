// The PostgreSQL store's opening and transactions (its connections:
// pg_pool.h; its schema: pg_schema.h; the writes: postgres_store_writes.cc;
// the reads: postgres_store_load.cc).
#include "server/store/postgres/postgres_session_store.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/pg_pool.h"
#include "server/store/postgres/pg_schema.h"
#include "server/store/postgres/pg_size_cap.h"

namespace f2obo::server {

PostgresSessionStore::PostgresSessionStore(std::string uri, Durability durability)
    : durability_(durability), pool_(std::move(uri), kConnections) {}

PostgresSessionStore::~PostgresSessionStore() = default;

absl::StatusOr<std::unique_ptr<PostgresSessionStore>> PostgresSessionStore::Open(
    const std::string& uri, Durability durability) {
  std::unique_ptr<PostgresSessionStore> store(new PostgresSessionStore(uri, durability));
  absl::StatusOr<std::unique_ptr<pg::Conn>> c = pg::Conn::Connect(uri);
  if (!c.ok()) return c.status();
  if (absl::Status s = pg::Schema::Open(**c); !s.ok()) return s;
  store->pool_.Add(*std::move(c));
  return store;
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
  if (s.ok() && grows) s = size_cap_.Check(*c);
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
    absl::Status s = grows ? size_cap_.Check(*c) : absl::OkStatus();
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
  size_cap_.Set(max_bytes);
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
