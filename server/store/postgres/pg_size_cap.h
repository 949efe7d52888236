// The PostgreSQL store's size cap (--max_store_bytes): whether the
// database may grow, from its size as PostgreSQL reports it
// (pg_database_size), read at most once a second.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_SIZE_CAP_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_SIZE_CAP_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "server/store/postgres/pg_conn.h"

namespace f2obo::server::pg {

class SizeCap {
 public:
  // The cap in bytes (<= 0: none); the next Check reads the size anew.
  void Set(int64_t max_bytes);
  // RESOURCE_EXHAUSTED while the database is at or over the cap (as last
  // read, on `c`, at most a second ago); the database's error if the size
  // cannot be read.
  absl::Status Check(Conn& c);

 private:
  absl::Mutex mu_;
  int64_t max_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t checked_ms_ ABSL_GUARDED_BY(mu_) = 0;
  bool over_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_SIZE_CAP_H_
