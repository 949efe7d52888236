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
// The ring of published messages is bounded in bytes, not in messages: a
// message is kept serialized (one allocation, no sub-message objects) and a
// session keeps its newest buffered_bytes of them (--metrics_buffer_bytes,
// by default kBufferedBytes), so a server's memory for metrics is at most
// max_sessions x buffered_bytes whatever the mix of
// messages with and without exact metrics (a ring of 1,024 parsed messages
// held ~550 KB a session, and more as the share with exact metrics rose).
//
// A bounded queue: the workers share the CPU with every request thread, and
// under enough concurrent streams (the soak: 64 clients on 2 cores) one
// worker fell behind even with exact metrics skipped, its queue of jobs,
// each holding its step's batches, growing by ~35 jobs a second without
// end.  So beyond twice max_pending_jobs queued for a session the step's
// own thread processes that session's oldest jobs until the queue is back
// at the bound: steps pay for metrics only when the workers cannot keep
// up, and memory stays bounded.
//
// Which due steps get exact metrics when the worker is behind: a random
// sample with known probabilities (core/metrics/sampling.h), never "the
// ones it happened to reach" -- skipped steps made BLReg, a sum over
// evaluated steps, go flat, which read as convergence.  A due step's
// probability p_t is fixed when its job is taken for processing
// (InclusionProbability of the jobs queued behind it: 1 while the worker
// keeps up, down to ExactSampling::floor), or when it is enqueued behind
// max_pending_jobs others (p_t = floor; an unsampled job then drops its
// state copy at once, so a backlog holds few).  Then one draw from the
// session's own generator decides.  p_t depends only on the backlog, never
// on the step's metrics, so the Horvitz-Thompson sums the accumulator
// keeps are unbiased.  A sampled step is evaluated by whichever thread
// processes it -- a helping step's thread too (at probability floor):
// dropping it there would make its inclusion depend on the load again.
// Each published message carries p_t (exact_probability), and a due step
// without exact metrics carries the running sums (coverage, estimate).
//
// Wake-ups: a worker woken from idle first gathers for kGatherWindow, so
// that one wake-up serves the steps of that window (a wake-up per step was
// the largest cost of tiny steps after the round itself); steps
// only wake a worker that is idle.  Metrics are published at most that
// much later.
//
// Thread-safety: all public methods are thread-safe.
#ifndef F2OBO_SERVER_METRICS_PIPELINE_H_
#define F2OBO_SERVER_METRICS_PIPELINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/class_metrics.h"
#include "core/problem.h"
#include "core/rng.h"
#include "core/session.h"
#include "core/session_config.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::server {

struct MetricsJob {
  int64_t t = 0;
  std::shared_ptr<const SessionState> before;  // the state the round started from
  StepReport report;
  std::shared_ptr<const StepData> data;
  bool exact_due = false;
  // Once decided (exact_due only): the probability p_t > 0 the step was
  // sampled with, and the draw.  0: not decided yet.
  double probability = 0.0;
  bool sampled = false;
  // The decision x the step left and the session's shown groups of it
  // (server/hyperparameters.h): the groups' means are published with the
  // step's metrics, computed by the worker (named messages a step were a
  // tenth of a tiny step's own work on its request thread).
  std::vector<double> x;
  std::shared_ptr<const std::vector<SessionConfig::XGroup>> x_groups;
};

// The sampling design's knobs (server --min_exact_probability,
// --exact_sample_probability).
struct ExactSampling {
  double floor = 0.05;   // no due step is evaluated with less
  double ceiling = 1.0;  // nor with more (< 1: a sample even without load)
};

// Adds a step's exact metrics (`m`, sampled with `probability`) to the
// session's running sums, or with m == nullptr counts a due step without
// them; returns the sums after the addition.
using MetricsAccumulator = std::function<RunningMetrics(const ClassMetrics* m, double probability)>;

// Receives every published message (e.g. the Prometheus exporter).
using MetricsObserver = std::function<void(const v1::StepMetrics&)>;

class MetricsPipeline;

// The rings of every open session, for /metrics (f2obo_metrics_buffer_*).
struct BufferTally {
  std::atomic<int64_t> bytes{0};          // accounted bytes of every ring
  std::atomic<int64_t> full_sessions{0};  // rings that have dropped a message
  std::atomic<int64_t> queued_jobs{0};    // jobs enqueued and not yet processed
};

// One session's published metrics and watchers.
class SessionMetrics {
 public:
  // The ring's budget: serialized sizes plus kEntryOverhead a message (its
  // deque slot and allocation), the newest messages that fit (at least one).
  // By default (kBufferedBytes) about a thousand steps at ~250 bytes a
  // message; MetricsPipeline's buffered_bytes sets it.
  static constexpr size_t kBufferedBytes = 256 * 1024;
  static constexpr size_t kEntryOverhead = 48;

  ~SessionMetrics();

  // Blocks until a message with t > after_t exists, the channel closes, or
  // `cancelled()` turns true (polled every 100 ms).  Returns nullopt when
  // closed or cancelled.  With `until_t` > 0, only messages with
  // t <= until_t are returned, and nullopt with `*ended` set as soon as no
  // more can come: after_t >= until_t, a later step's message is buffered
  // (steps publish in order), or until_t <= start_t() and no buffered one
  // is left (steps before the channel opened that it does not hold: the
  // server restarted, or the session was imported, since).
  std::optional<v1::StepMetrics> NextAfter(int64_t after_t, const std::function<bool()>& cancelled,
                                           int64_t until_t = 0, bool* ended = nullptr);
  // The session's last step applied when this channel opened.
  int64_t start_t() const { return start_t_; }
  // The buffered messages with t > after_t, oldest first, at most `max` of
  // them (the oldest ones).  Never waits: a copy of what is there now.
  std::vector<v1::StepMetrics> Snapshot(int64_t after_t,
                                        size_t max = std::numeric_limits<size_t>::max()) const;
  // Newest exact metrics published so far.
  std::optional<v1::ExactMetrics> LatestExact() const;
  // Ends watchers (session deleted or server stopping).
  void Close();
  bool closed() const;

 private:
  friend class MetricsPipeline;
  struct Entry {
    int64_t t;
    std::string bytes;  // the serialized v1::StepMetrics
  };

  SessionMetrics(std::string id, std::unique_ptr<MetricsEvaluator> evaluator,
                 MetricsAccumulator accumulate, std::shared_ptr<BufferTally> tally, int64_t start_t,
                 size_t buffered_bytes);
  void Publish(const v1::StepMetrics& m);
  // The first buffered entry with t > after_t.
  std::deque<Entry>::const_iterator FirstAfter(int64_t after_t) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::string id_;
  const int64_t start_t_;
  const size_t buffered_bytes_;  // the ring's budget
  // The session's turn: held while one of its jobs is taken and processed,
  // by a worker or a helping step thread; guards what processing uses.
  // Ordered before mu_.
  absl::Mutex process_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::unique_ptr<MetricsEvaluator> evaluator_ ABSL_GUARDED_BY(process_mu_);
  MetricsAccumulator accumulate_ ABSL_GUARDED_BY(process_mu_);
  std::shared_ptr<const StepData> previous_ ABSL_GUARDED_BY(process_mu_);
  const std::shared_ptr<BufferTally> tally_;

  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // watchers: a message published, or closed
  std::deque<MetricsJob> jobs_ ABSL_GUARDED_BY(mu_);
  bool scheduled_ ABSL_GUARDED_BY(mu_) = false;  // in the ready queue or running
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Entry> published_ ABSL_GUARDED_BY(mu_);  // the newest buffered_bytes_
  size_t published_bytes_ ABSL_GUARDED_BY(mu_) = 0;   // accounted size of published_
  bool full_ ABSL_GUARDED_BY(mu_) = false;            // a message was ever dropped
  std::optional<v1::ExactMetrics> latest_exact_ ABSL_GUARDED_BY(mu_);
  Rng sampler_ ABSL_GUARDED_BY(mu_);  // the draws of the sampling design
};

class MetricsPipeline {
 public:
  // `buffered_bytes`: each session's ring budget (SessionMetrics).
  MetricsPipeline(int threads, int max_pending_jobs, MetricsObserver observer,
                  ExactSampling sampling = {},
                  size_t buffered_bytes = SessionMetrics::kBufferedBytes);
  ~MetricsPipeline();  // Stop()s

  // A session's channel.  `evaluator` computes the exact metrics (its own
  // family instance); `accumulate` adds them to the session's running sums
  // under the session's lock and returns the sums after the addition.
  // `start_t`: the session's last step applied when the channel opens (its
  // later steps all publish here); `history`: earlier steps' messages it
  // starts with (those with t <= start_t, relabelled with session_id), so
  // that a rollback keeps the steps it did not undo and a fork inherits
  // its source's.
  std::shared_ptr<SessionMetrics> Open(std::string session_id,
                                       std::unique_ptr<MetricsEvaluator> evaluator,
                                       MetricsAccumulator accumulate, int64_t start_t = 0,
                                       std::vector<v1::StepMetrics> history = {});

  void Enqueue(const std::shared_ptr<SessionMetrics>& session, MetricsJob job);

  // Finishes queued jobs, ends every watcher, joins the workers.
  void Stop();
  // Whether Stop() has begun.
  bool stopping() const;
  // Totals over the open sessions' rings (live: read atomically).
  const BufferTally& buffers() const { return *tally_; }

 private:
  static constexpr std::chrono::microseconds kGatherWindow{2000};

  void WorkerLoop();
  // A step's thread processing its session's oldest jobs while more than
  // HelpAbove() are queued.
  void Help(SessionMetrics& s);
  int HelpAbove() const { return 2 * max_pending_; }
  void Process(SessionMetrics& s, MetricsJob job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.process_mu_);
  // Fixes a due job's p_t from the `queued` jobs behind it and draws
  // (no-op when not due or decided); an unsampled job drops its state.
  void Decide(SessionMetrics& s, MetricsJob& job, size_t queued) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu_);

  const int max_pending_;
  const ExactSampling sampling_;
  const size_t buffered_bytes_;
  MetricsObserver observer_;
  // Shared with each SessionMetrics, which may outlive the pipeline.
  const std::shared_ptr<BufferTally> tally_ = std::make_shared<BufferTally>();
  mutable absl::Mutex mu_;
  absl::CondVar ready_cv_;  // idle workers: ready_ not empty, or stopping_
  absl::CondVar stop_cv_;   // gathering workers: stopping_
  int idle_workers_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::shared_ptr<SessionMetrics>> ready_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<SessionMetrics>> open_ ABSL_GUARDED_BY(mu_);  // (weak use)
  std::vector<std::thread> workers_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_METRICS_PIPELINE_H_
