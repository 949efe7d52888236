// One session as this server holds it: the core Session, its reply cache,
// the checkpoints it keeps, its metrics channel, and the immutable view of
// its last committed state that readers see.  Owned (shared) by the
// session table; written by the step runner, checkpoints and installs.
//
// Thread-safety: steps and other writers are serialized by `mu`.  Readers
// (GetSession, ListSessions, GetDecision) never take it: they read the
// published view, so no read waits for a round.  Lock order: mu -> sums_mu
// -> view_mu and mu -> metrics_mu (ABSL_ACQUIRED_BEFORE below: clang's
// analysis checks them, scripts/check_thread_safety.py); and a step
// holding mu may take its metrics channel's turn (the pipeline's
// SessionMetrics::process_mu_, when it helps a late worker), which nests
// before sums_mu and is never taken by a holder of sums_mu or view_mu.
#ifndef F2OBO_SERVER_SESSION_ENTRY_H_
#define F2OBO_SERVER_SESSION_ENTRY_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/session.h"
#include "core/session_config.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/metrics_pipeline.h"

namespace f2obo::server {

// What readers of a session see: its last committed state, immutable.
// `session` is read only for what never changes after creation (config,
// problem shapes); the running sums, which do change, are copied.
struct SessionView {
  std::shared_ptr<const Session> session;
  std::shared_ptr<const SessionState> state;
  RunningMetrics metrics;
  std::vector<int64_t> checkpoints;  // the steps after which one was kept
};

struct SessionEntry {
  std::string id;
  int exact_every = 0;
  // Serializes steps and other writers.
  mutable absl::Mutex mu ABSL_ACQUIRED_BEFORE(sums_mu, metrics_mu);
  // The running sums (session->metrics()), which the metrics worker adds
  // to without waiting for a round: read and written under sums_mu;
  // `session` and `generation` are replaced under mu and sums_mu.
  mutable absl::Mutex sums_mu ABSL_ACQUIRED_BEFORE(view_mu);
  // Published under mu after every change; read under view_mu alone.
  mutable absl::Mutex view_mu;
  std::shared_ptr<const SessionView> view ABSL_GUARDED_BY(view_mu);
  // Set by a delete before it waits for mu, so that a running round stops.
  std::atomic<bool> stop_rounds{false};
  // Set before the entry is findable; replaced by a rollback (under mu
  // and metrics_mu), so that a new watcher takes only metrics_mu and never
  // waits for a round.
  mutable absl::Mutex metrics_mu;
  // Read under mu or metrics_mu, written under both: like `session`,
  // beyond what one annotation names.
  std::shared_ptr<SessionMetrics> metrics;
  // A fork's: its source's step metrics up to the fork point, which its
  // channel starts with (Installs::PublishClaimed; then emptied).
  std::vector<v1::StepMetrics> inherited_metrics;
  // Guarded by mu and sums_mu together (see sums_mu): an annotation
  // names one lock, so the analysis does not check this pointer.
  std::shared_ptr<Session> session;
  std::deque<v1::StepReply> replies ABSL_GUARDED_BY(mu);  // newest last
  // The groups x is shown in (ShownXGroups of the session's config and
  // x's size, which a rollback keeps), made at the first step and handed
  // to every step's metrics job.
  std::shared_ptr<const std::vector<SessionConfig::XGroup>> shown_x_groups ABSL_GUARDED_BY(mu);
  // Whether the store's row holds session->state() in parts (so a step
  // writes only the parts it changed): true after a create, import or
  // fork (Installs::RecordOf); false after a load or rollback, which leave
  // the whole state.
  bool store_in_parts ABSL_GUARDED_BY(mu) = false;
  // The kept checkpoints by their state's next step index; their bytes
  // are in the store, or in `memory_checkpoints` when there is none.
  std::set<int64_t> checkpoints ABSL_GUARDED_BY(mu);
  std::map<int64_t, std::string> memory_checkpoints ABSL_GUARDED_BY(mu);
  // Checkpoints in parts (with a store; server/store/checkpoints.cc): the
  // next step index of the newest checkpoint written in parts, which the
  // next one extends (0: none, the next is written with every part), and
  // the aux parts changed since it.
  int64_t checkpoint_base ABSL_GUARDED_BY(mu) = 0;
  std::set<int64_t> changed_since_checkpoint ABSL_GUARDED_BY(mu);
  // Bumped by a rollback: metrics of the abandoned steps, still in the
  // pipeline, must not add to the restored running sums.
  uint64_t generation = 0;  // guarded by mu and sums_mu (writes: both), as `session`
  // Set by a delete once the session left the table and the store:
  // holders of the entry found before then must neither serve it nor
  // persist it.
  bool removed ABSL_GUARDED_BY(mu) = false;
  // Set when the table let go of this copy of a session in a shared store
  // (SessionTable::Drop: a write found the stored session moved on by
  // another server): holders of the entry must find the session again
  // (the table loads it anew) instead of writing from this copy.
  bool dropped ABSL_GUARDED_BY(mu) = false;
  int64_t reserved_bytes = 0;  // its share of the table's reserved memory

  // NOT_FOUND for an entry deleted after it was found.
  absl::Status CheckNotRemoved() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // For t != the next step index: the cached reply of t (marked replayed)
  // or FAILED_PRECONDITION naming the expected index.
  absl::StatusOr<v1::StepReply> CachedOrRefused(int64_t t) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // What GetSession answers from the current state.
  v1::SessionInfo Info() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  // The same from a published view (no lock).
  v1::SessionInfo InfoOf(const SessionView& view) const;
  // A view of the current state; Publish makes it the one readers see;
  // PublishSums replaces only the running sums of the published view.
  std::shared_ptr<const SessionView> CurrentView() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu, sums_mu);
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);
  void PublishSums() ABSL_EXCLUSIVE_LOCKS_REQUIRED(sums_mu);
  // The published view (null before the entry is installed).
  std::shared_ptr<const SessionView> PublishedView() const;
  // The checkpoint encoding of `state` with the running sums.
  std::string Encode(const SessionState& state) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu);

  // The metrics channel of `entry` for its session of `generation`,
  // starting with `history` (earlier steps' messages, up to the session's
  // last step applied).  The worker's accumulator adds to the session's
  // running sums under sums_mu, never waiting for a round (which holds
  // mu), unless a rollback replaced the session since (a later
  // generation).
  static std::shared_ptr<SessionMetrics> OpenMetrics(const std::shared_ptr<SessionEntry>& entry,
                                                     MetricsPipeline* pipeline,
                                                     std::unique_ptr<MetricsEvaluator> evaluator,
                                                     uint64_t generation,
                                                     std::vector<v1::StepMetrics> history = {});
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_ENTRY_H_
