// Cross-session group commit of the PostgreSQL store's one-statement
// steps: the statements that callers on several threads have queued at one
// moment are sent on one connection in pipeline mode as one transaction,
// so N steps cost the database one round trip, one commit, one WAL flush
// and one wake-up of its backend instead of N of each (PostgreSQL's own
// group commit shares the flush only, not the rest of a commit's CPU).
//
// Each statement keeps its own compare-and-set: one that matches no row
// returns no row and does not abort the others.  A statement that fails
// aborts the whole transaction: nothing of the batch is committed, and
// each caller is told to run its statement alone (Outcome::kAlone).  A
// connection that breaks while the batch runs leaves the outcome unknown
// (Outcome::kUnknown): the caller reads its write back, never guesses.
//
// When a batch starts: at once when none is in flight (one stream's step
// costs what it did without the batcher); while n are in flight, once more
// than n statements wait (so a batch is never of one statement while
// others run, and under load batches grow instead of waiting in line);
// at most `in_flight` at once, each on a pooled connection of its own.
// The first caller in the queue leads it, with the statements queued by
// then, and answers each of them.  Many batches may be in flight, so the
// database's own group commit still shares one WAL flush among them: a
// batch never waits for another's flush to start its own.
//
// Statements are sent in the order of their keys (the session ids): two
// batches, of this server or another, lock rows in one order and cannot
// deadlock each other.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_BATCHER_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_BATCHER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/pg_pool.h"
#include "server/store/postgres/pg_size_cap.h"

namespace f2obo::server::pg {

class Batcher {
 public:
  using Deadline = Pool::Deadline;
  // What to make of a committed statement's rows, on the connection that
  // ran it (a further read there is outside the batch's transaction).
  using Finish = std::function<absl::Status(Conn&, const Result&)>;
  enum class Outcome {
    kDone,     // `status` is the call's answer (Finish's, or why it failed)
    kAlone,    // nothing committed: run the statement alone
    kUnknown,  // the connection broke: committed or not, read it back
  };
  struct Done {
    Outcome outcome = Outcome::kAlone;
    absl::Status status;
  };
  // Batches of at most this many statements and this many bytes of
  // parameters.  A statement larger than kMaxBytes is not batched at all
  // (Transactions runs it alone): the small steps of other sessions never
  // wait for a large one's execution and flush.
  static constexpr size_t kMaxStatements = 64;
  static constexpr size_t kMaxBytes = size_t{64} << 10;

  Batcher(Pool* pool, SizeCap* cap, int64_t in_flight)
      : pool_(pool), cap_(cap), in_flight_max_(in_flight) {}

  // Runs `statement` (ordered by `key`) committed in a batch; `grows`: the
  // batch is refused while the store is over its size cap.  Waiting in the
  // queue past `deadline`: kDone, DEADLINE_EXCEEDED (not sent).
  Done Run(const std::string& key, const Statement& statement, const Finish& finish,
           Deadline deadline, bool grows);
  // Batches run so far, the statements in them, and the statements
  // waiting for a batch now.
  int64_t batches() const;
  int64_t statements() const;
  int64_t queued() const;

 private:
  struct Item {
    const std::string* key;
    const Statement* statement;
    const Finish* finish;
    Deadline deadline;
    bool grows;
    bool taken = false;
    bool done = false;
    Done result;
  };
  // Sends `batch` as one transaction and sets each item's result.
  void RunBatch(std::vector<Item*>& batch);

  Pool* const pool_;
  SizeCap* const cap_;
  const int64_t in_flight_max_;
  mutable absl::Mutex mu_;
  std::deque<Item*> queue_ ABSL_GUARDED_BY(mu_);
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t batches_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t statements_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_BATCHER_H_
