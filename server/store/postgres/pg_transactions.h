// The PostgreSQL store's transactions: BEGIN, a body of statements, COMMIT
// on a pooled connection (or one statement committed on its own), and the
// outcome of a commit whose connection broke read back on a new connection,
// never guessed: the call succeeds only if the write is stored.
//
// Thread-safety: thread-safe (each call on a connection of its own).
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_TRANSACTIONS_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_TRANSACTIONS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/pg_pool.h"
#include "server/store/postgres/pg_size_cap.h"

namespace f2obo::server::pg {

class Transactions {
 public:
  using Deadline = Pool::Deadline;
  // A transaction's body: the statements, on the lent connection.
  using Body = std::function<absl::Status(Conn&)>;
  // After a commit whose outcome is unknown: whether the write is stored,
  // read on a new connection.
  using ReadBack = std::function<absl::StatusOr<bool>(Conn&)>;

  // Connections from `pool`; growing writes refused while `cap` says so;
  // `committed` told each committed transaction's latency in seconds.
  Transactions(Pool* pool, SizeCap* cap, std::function<void(double)> committed)
      : pool_(pool), cap_(cap), committed_(std::move(committed)) {}

  // BEGIN, `body`, COMMIT (`sync`: false commits with synchronous_commit =
  // off); DEADLINE_EXCEEDED if `deadline` passes first (not written).
  // `read_back` resolves a COMMIT whose outcome is unknown; `grows`: refused
  // while the store is over its size cap.  `one_statement`: the body is one
  // statement, committed on its own (no BEGIN/COMMIT round trips; it must
  // set synchronous_commit itself).
  absl::Status Run(absl::string_view what, Deadline deadline, bool sync, const Body& body,
                   const ReadBack& read_back, bool grows, bool one_statement);
  // Commits whose outcome was unknown and was read back.
  int64_t read_backs() const { return read_backs_.load(); }

 private:
  // Whether a write whose connection broke was stored, asked on a new
  // connection (a write is either all there or not at all).
  absl::StatusOr<bool> ReadBackOnNewConnection(const ReadBack& read_back, Deadline deadline);
  // Run's one-statement case.
  absl::Status RunOne(absl::string_view what, Deadline deadline, const Body& body,
                      const ReadBack& read_back, bool grows,
                      std::chrono::steady_clock::time_point start);

  Pool* const pool_;
  SizeCap* const cap_;
  const std::function<void(double)> committed_;
  std::atomic<int64_t> read_backs_{0};
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_TRANSACTIONS_H_
