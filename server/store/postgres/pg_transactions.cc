#include "server/store/postgres/pg_transactions.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo::server::pg {

absl::Status Transactions::Run(absl::string_view what, Deadline deadline, bool sync,
                               const Body& body, const ReadBack& read_back, bool grows) {
  const auto start = std::chrono::steady_clock::now();
  if (std::chrono::system_clock::now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("deadline passed before ", what));
  }
  std::unique_ptr<Conn> c;
  absl::Status s;
  // A pooled connection that died with its server (a restart, a failover)
  // is only found dead when used: if BEGIN finds it so, nothing was sent,
  // and the transaction starts again on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::unique_ptr<Conn>> acquired = pool_->Acquire(deadline);
    if (!acquired.ok()) return acquired.status();
    c = *std::move(acquired);
    s = c->Exec(what, "BEGIN").status();
    if (s.ok() || !c->broken()) break;
    pool_->Release(std::move(c));
  }
  if (c == nullptr) return s;
  if (s.ok() && grows) s = cap_->Check(*c);
  if (s.ok() && !sync) s = c->Exec(what, "SET LOCAL synchronous_commit = off").status();
  if (s.ok()) s = body(*c);
  if (!s.ok()) {
    if (!c->broken()) (void)c->Exec("rolling back", "ROLLBACK");
    pool_->Release(std::move(c));
    return s;
  }
  absl::StatusOr<Result> committed = c->Exec(what, "COMMIT");
  if (committed.ok() || !c->broken()) {
    pool_->Release(std::move(c));
    if (committed.ok()) {
      committed_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return committed.status();
  }
  // The connection broke during COMMIT: stored or not, only the database
  // knows.  Asked on a new connection (the write is either all there or
  // not at all).
  pool_->Release(std::move(c));
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

absl::Status Transactions::RunBatched(absl::string_view what, Deadline deadline,
                                      const std::string& key, const Statement& statement,
                                      const Batcher::Finish& finish, const ReadBack& read_back,
                                      bool grows) {
  const auto start = std::chrono::steady_clock::now();
  if (std::chrono::system_clock::now() >= deadline) {
    return absl::DeadlineExceededError(absl::StrCat("deadline passed before ", what));
  }
  const Body alone = [&](Conn& c) -> absl::Status {
    absl::StatusOr<Result> r = c.Run(what, statement);
    if (!r.ok()) return r.status();
    return finish(c, *r);
  };
  if (statement.bytes() > Batcher::kMaxBytes) {
    return RunOne(what, deadline, alone, read_back, grows, start, /*broke=*/false);
  }
  const Batcher::Done done = batcher_.Run(key, statement, finish, deadline, grows);
  switch (done.outcome) {
    case Batcher::Outcome::kDone:
      if (done.status.ok()) {
        committed_(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      return done.status;
    case Batcher::Outcome::kAlone:
      return RunOne(what, deadline, alone, read_back, grows, start, /*broke=*/false);
    case Batcher::Outcome::kUnknown:  // all of the batch committed, or none
      break;
  }
  return RunOne(what, deadline, alone, read_back, grows, start, /*broke=*/true);
}

absl::StatusOr<bool> Transactions::ReadBackOnNewConnection(const ReadBack& read_back,
                                                           Deadline deadline) {
  read_backs_.fetch_add(1);
  absl::StatusOr<std::unique_ptr<Conn>> again = pool_->Acquire(deadline);
  if (!again.ok()) return again.status();
  absl::StatusOr<bool> stored = read_back(**again);
  pool_->Release(*std::move(again));
  return stored;
}

absl::Status Transactions::RunOne(absl::string_view what, Deadline deadline, const Body& body,
                                  const ReadBack& read_back, bool grows,
                                  std::chrono::steady_clock::time_point start, bool broke) {
  // The statement commits on its own; a connection that breaks while it
  // runs leaves its outcome unknown (it may have committed): read back on
  // a new connection.  Not stored: run again there, once (a pooled
  // connection that died with its server is only found dead when used).
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0 || !broke) {
      absl::StatusOr<std::unique_ptr<Conn>> acquired = pool_->Acquire(deadline);
      if (!acquired.ok()) return acquired.status();
      std::unique_ptr<Conn> c = *std::move(acquired);
      absl::Status s = grows ? cap_->Check(*c) : absl::OkStatus();
      if (s.ok()) s = body(*c);
      const bool broken = c->broken();
      pool_->Release(std::move(c));
      if (s.ok() || !broken) {
        if (s.ok()) {
          committed_(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        return s;
      }
    }
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

}  // namespace f2obo::server::pg
