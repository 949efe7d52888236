// Per-session metrics off the request path.
//
// After each applied step the session manager enqueues a job (the snapshot
// of the state the round started from, the round report and the step's
// batches).  Worker threads process each
// session's jobs strictly in step order, one job of a session at a time:
// exact metrics when due (every N-th step), accumulation of the running
// sums, then publication of a StepMetrics message to the session's ring
// buffer and its watchers.  Steps never wait for metrics.
//
// Wake-ups: a worker woken from idle first gathers for kGatherWindow, so
// that one wake-up serves the steps of that window (a wake-up per step was
// the largest cost of tiny steps after the round itself, issue 15); steps
// only wake a worker that is idle.  Metrics are published at most that
// much later.
//
// Thread-safety: all public methods are thread-safe.
#ifndef F2OBO_SERVER_METRICS_PIPELINE_H_
#define F2OBO_SERVER_METRICS_PIPELINE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/class_metrics.h"
#include "core/problem.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::server {

struct MetricsJob {
  int64_t t = 0;
  std::shared_ptr<const SessionState> before;  // the state the round started from
  StepReport report;
  std::shared_ptr<const StepData> data;
  bool exact_due = false;
  std::string skipped_reason;  // set when exact metrics were due but dropped
};

// Receives every published message (e.g. the Prometheus exporter).
using MetricsObserver = std::function<void(const v1::StepMetrics&)>;

class SessionMetrics;

class MetricsPipeline {
 public:
  MetricsPipeline(int threads, int max_pending_jobs, MetricsObserver observer);
  ~MetricsPipeline();  // Stop()s

  // A session's channel.  `evaluator` computes the exact metrics (its own
  // family instance); `accumulate` adds them to the session's running sums
  // under the session's lock and returns the sums after the addition.
  std::shared_ptr<SessionMetrics> Open(
      std::string session_id, std::unique_ptr<MetricsEvaluator> evaluator,
      std::function<RunningMetrics(const ClassMetrics&)> accumulate);

  void Enqueue(const std::shared_ptr<SessionMetrics>& session, MetricsJob job);

  // Finishes queued jobs, ends every watcher, joins the workers.
  void Stop();
  // Whether Stop() has begun.
  bool stopping() const;

 private:
  static constexpr std::chrono::microseconds kGatherWindow{2000};

  void WorkerLoop();
  void Process(SessionMetrics& s, MetricsJob job);

  const int max_pending_;
  MetricsObserver observer_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;  // idle workers: ready_ not empty, or stopping_
  std::condition_variable stop_cv_;   // gathering workers: stopping_
  int idle_workers_ = 0;              // guarded by mu_
  std::deque<std::shared_ptr<SessionMetrics>> ready_;  // guarded by mu_
  bool stopping_ = false;                              // guarded by mu_
  std::vector<std::shared_ptr<SessionMetrics>> open_;  // guarded by mu_ (weak use)
  std::vector<std::thread> workers_;
};

// One session's published metrics and watchers.
class SessionMetrics {
 public:
  static constexpr size_t kBuffered = 1024;

  // Blocks until a message with t > after_t exists, the channel closes, or
  // `cancelled()` turns true (polled every 100 ms).  Returns nullopt when
  // closed or cancelled.
  std::optional<v1::StepMetrics> NextAfter(int64_t after_t,
                                           const std::function<bool()>& cancelled);
  // The buffered messages with t > after_t, oldest first, at most `max` of
  // them (the oldest ones).  Never waits: a copy of what is there now.
  std::vector<v1::StepMetrics> Snapshot(int64_t after_t, size_t max = kBuffered) const;
  // Newest exact metrics published so far.
  std::optional<v1::ExactMetrics> LatestExact() const;
  // Ends watchers (session deleted or server stopping).
  void Close();
  bool closed() const;

 private:
  friend class MetricsPipeline;
  SessionMetrics(std::string id, std::unique_ptr<MetricsEvaluator> evaluator,
                 std::function<RunningMetrics(const ClassMetrics&)> accumulate)
      : id_(std::move(id)), evaluator_(std::move(evaluator)),
        accumulate_(std::move(accumulate)) {}
  void Publish(v1::StepMetrics m);

  const std::string id_;
  // Worker-only (one job of a session at a time): no lock needed.
  std::unique_ptr<MetricsEvaluator> evaluator_;
  std::function<RunningMetrics(const ClassMetrics&)> accumulate_;
  std::shared_ptr<const StepData> previous_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<MetricsJob> jobs_;            // guarded by mu_
  bool scheduled_ = false;                 // in the ready queue or running
  bool closed_ = false;
  std::deque<v1::StepMetrics> published_;  // last kBuffered
  std::optional<v1::ExactMetrics> latest_exact_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_METRICS_PIPELINE_H_
