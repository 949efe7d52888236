// The PostgreSQL store's opening and write versions (its connections:
// pg_pool.h; its schema: pg_schema.h; its transactions: pg_transactions.h;
// its size cap: pg_size_cap.h; the calls: postgres_store_calls.cc; the
// writes: postgres_store_writes.cc; the reads: postgres_store_load.cc).
#include "server/store/postgres/postgres_session_store.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/pg_pool.h"
#include "server/store/postgres/pg_schema.h"
#include "server/store/postgres/pg_size_cap.h"
#include "server/store/postgres/pg_transactions.h"

namespace f2obo::server {

PostgresSessionStore::PostgresSessionStore(std::string uri, Durability durability)
    : durability_(durability),
      pool_(std::move(uri), kConnections),
      transactions_(&pool_, &size_cap_, [this](double seconds) { CommitObserved(seconds); }) {}

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
                                            const Body& body, const ReadBack& read_back,
                                            bool grows) {
  return transactions_.Run(what, deadline, sync, body, read_back, grows);
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
