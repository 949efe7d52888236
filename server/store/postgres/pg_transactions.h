// The PostgreSQL store's transactions: BEGIN, a body of statements, COMMIT
// on a pooled connection (or one statement committed on its own, perhaps
// in a batch with other callers' statements: pg_batcher.h), and the
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
#include "server/store/postgres/pg_batcher.h"
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
      : pool_(pool),
        cap_(cap),
        committed_(std::move(committed)),
        batcher_(pool, cap, pool->size()) {}

  // BEGIN, `body`, COMMIT (`sync`: false commits with synchronous_commit =
  // off); DEADLINE_EXCEEDED if `deadline` passes first (not written).
  // `read_back` resolves a COMMIT whose outcome is unknown; `grows`: refused
  // while the store is over its size cap.
  absl::Status Run(absl::string_view what, Deadline deadline, bool sync, const Body& body,
                   const ReadBack& read_back, bool grows);
  // `statement`, one statement committed on its own (no BEGIN/COMMIT round
  // trips; it sets synchronous_commit itself), keyed `key` (a session id),
  // in a batch with other callers' statements queued at the same
  // moment (pg::Batcher; one larger than its kMaxBytes alone); `finish`
  // makes the call's answer of its rows.  A
  // batch that failed: run alone; one whose connection broke:
  // `read_back`, and if not stored, run alone.
  absl::Status RunBatched(absl::string_view what, Deadline deadline, const std::string& key,
                          const Statement& statement, const Batcher::Finish& finish,
                          const ReadBack& read_back, bool grows);
  // Commits whose outcome was unknown and was read back.
  int64_t read_backs() const { return read_backs_.load(); }
  const Batcher& batcher() const { return batcher_; }

 private:
  // Whether a write whose connection broke was stored, asked on a new
  // connection (a write is either all there or not at all).
  absl::StatusOr<bool> ReadBackOnNewConnection(const ReadBack& read_back, Deadline deadline);
  // `body`, one statement committed on its own, alone on a connection;
  // `broke`: it already ran (in a batch) and the connection broke, so its
  // outcome is read back first.
  absl::Status RunOne(absl::string_view what, Deadline deadline, const Body& body,
                      const ReadBack& read_back, bool grows,
                      std::chrono::steady_clock::time_point start, bool broke);

  Pool* const pool_;
  SizeCap* const cap_;
  const std::function<void(double)> committed_;
  std::atomic<int64_t> read_backs_{0};
  Batcher batcher_;
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_TRANSACTIONS_H_
