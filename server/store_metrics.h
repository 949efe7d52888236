// Prometheus series of the session store and of the sessions held in
// memory (a shared store's are loaded on demand and evicted):
//   f2obo_store_commit_seconds              histogram: a committed write
//                                           transaction's latency (shared store)
//   f2obo_store_conflicts_resolved_total    writes that found the stored
//                                           session moved on by another
//                                           server and were answered from it,
//                                           reloaded
//   f2obo_store_reconnects_total            database connections remade
//   f2obo_store_commits_read_back_total     commits whose outcome was unknown
//                                           (connection lost in COMMIT), read back
//   f2obo_store_sessions_loaded_total       sessions loaded on demand
//   f2obo_store_sessions_evicted_total      idle sessions dropped from memory
//   f2obo_sessions_resident                 sessions held in memory now
// The counters are the store's and the manager's own, copied at each
// scrape (Refresh), so the step path pays no more than an atomic add.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_METRICS_H_
#define F2OBO_SERVER_STORE_METRICS_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/registry.h"
#include "server/session_manager.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class StoreMetrics {
 public:
  // `store` may be null (in-memory sessions: no store series).  All must
  // outlive this; the store's commit observer is set here.
  StoreMetrics(metrics::Registry* registry, const SessionManager* sessions, SessionStore* store);
  void Refresh();  // before rendering the registry

 private:
  // Adds to `counter` what `now` grew by since `*seen`.
  static void Advance(metrics::Counter* counter, int64_t now, int64_t* seen);

  const SessionManager* const sessions_;
  const SessionStore* const store_;
  metrics::Counter* conflicts_ = nullptr;
  metrics::Counter* reconnects_ = nullptr;
  metrics::Counter* read_back_ = nullptr;
  metrics::Counter* loaded_ = nullptr;
  metrics::Counter* evicted_ = nullptr;
  metrics::Gauge* resident_ = nullptr;
  absl::Mutex mu_;
  int64_t seen_conflicts_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t seen_reconnects_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t seen_read_back_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t seen_loaded_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t seen_evicted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_METRICS_H_
