// The PostgreSQL store's connections: at most `size` libpq connections to
// one URI, each lent to one caller at a time.  A connection is made when
// none is idle and fewer than `size` are lent, and made anew when the one
// lent is found broken (a multi-host URI with target_session_attrs finds
// the new primary after a failover); while none can be made, Acquire is
// UNAVAILABLE.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_POOL_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_POOL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/store/postgres/pg_conn.h"

namespace f2obo::server::pg {

class Pool {
 public:
  using Deadline = std::chrono::system_clock::time_point;

  Pool(std::string uri, int size) : uri_(std::move(uri)), size_(size) {}
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Adds a connection made by the caller (the one that opened the store).
  void Add(std::unique_ptr<Conn> c);
  // A connection (made, or remade when broken), waiting for one while all
  // are lent, until `deadline` (DEADLINE_EXCEEDED); UNAVAILABLE when none
  // can be made.
  absl::StatusOr<std::unique_ptr<Conn>> Acquire(Deadline deadline);
  // Gives back what Acquire lent (null: dropped); a broken one is dropped
  // and replaced at a later Acquire.
  void Release(std::unique_ptr<Conn> c);
  // At most this many connections at once.
  int size() const { return size_; }
  // Connections made to replace broken ones.
  int64_t reconnects() const { return reconnects_.load(); }

 private:
  const std::string uri_;
  const int size_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<Conn>> idle_ ABSL_GUARDED_BY(mu_);
  int lent_ ABSL_GUARDED_BY(mu_) = 0;
  int broken_ ABSL_GUARDED_BY(mu_) = 0;  // connections dropped broken, not yet replaced
  std::atomic<int64_t> reconnects_{0};
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_POOL_H_
