#include "server/metrics_pipeline.h"

#include <algorithm>
#include <chrono>
#include <functional>

#include "absl/strings/str_cat.h"
#include "core/metrics/sampling.h"
#include "f2obo/v1/convert.h"
#include "server/hyperparameters.h"

namespace f2obo::server {

SessionMetrics::SessionMetrics(std::string id, std::unique_ptr<MetricsEvaluator> evaluator,
                               MetricsAccumulator accumulate, std::shared_ptr<BufferTally> tally,
                               int64_t start_t, size_t buffered_bytes)
    : id_(std::move(id)),
      start_t_(start_t),
      buffered_bytes_(buffered_bytes),
      evaluator_(std::move(evaluator)),
      accumulate_(std::move(accumulate)),
      tally_(std::move(tally)),
      // Seeded by the id: a session's draws are reproducible run to run
      // (given the same backlogs), and independent of its metrics.
      sampler_(std::hash<std::string>()(id_) ^ 0x5eed26u) {}

MetricsPipeline::MetricsPipeline(int threads, int max_pending_jobs, MetricsObserver observer,
                                 ExactSampling sampling, size_t buffered_bytes)
    : max_pending_(max_pending_jobs),
      sampling_(sampling),
      buffered_bytes_(buffered_bytes),
      observer_(std::move(observer)) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

MetricsPipeline::~MetricsPipeline() { Stop(); }

std::shared_ptr<SessionMetrics> MetricsPipeline::Open(std::string session_id,
                                                      std::unique_ptr<MetricsEvaluator> evaluator,
                                                      MetricsAccumulator accumulate,
                                                      int64_t start_t,
                                                      std::vector<v1::StepMetrics> history) {
  std::shared_ptr<SessionMetrics> s(new SessionMetrics(std::move(session_id), std::move(evaluator),
                                                       std::move(accumulate), tally_, start_t,
                                                       buffered_bytes_));
  std::sort(history.begin(), history.end(),
            [](const v1::StepMetrics& a, const v1::StepMetrics& b) { return a.t() < b.t(); });
  for (v1::StepMetrics& m : history) {
    if (m.t() > start_t) break;
    m.set_session_id(s->id_);
    s->Publish(m);  // the ring only: the exporter saw these steps already
  }
  absl::MutexLock lock(&mu_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [](const auto& p) { return p.use_count() == 1 || p->closed(); }),
              open_.end());
  open_.push_back(s);
  return s;
}

void MetricsPipeline::Enqueue(const std::shared_ptr<SessionMetrics>& s, MetricsJob job) {
  bool schedule = false;
  bool help = false;
  {
    absl::MutexLock lock(&s->mu_);
    if (s->closed_) return;
    if (static_cast<int>(s->jobs_.size()) >= max_pending_) {
      // Decided now, at the floor: an unsampled job holds no state copy
      // while it waits (only exact metrics read it).
      Decide(*s, job, s->jobs_.size());
    }
    s->jobs_.push_back(std::move(job));
    ++tally_->queued_jobs;
    if (!s->scheduled_) schedule = s->scheduled_ = true;
    help = static_cast<int>(s->jobs_.size()) > HelpAbove();
  }
  if (schedule) {
    absl::MutexLock lock(&mu_);
    ready_.push_back(s);
    // A busy or gathering worker comes back to ready_ by itself.
    if (idle_workers_ > 0) ready_cv_.Signal();
  }
  if (help) Help(*s);
}

void MetricsPipeline::Help(SessionMetrics& s) {
  absl::MutexLock turn(&s.process_mu_);
  for (;;) {
    MetricsJob job;
    {
      absl::MutexLock lock(&s.mu_);
      if (s.closed_ || static_cast<int>(s.jobs_.size()) <= HelpAbove()) return;
      job = std::move(s.jobs_.front());
      s.jobs_.pop_front();
      Decide(s, job, s.jobs_.size());  // at the floor: more than 2 max_pending behind
    }
    --tally_->queued_jobs;
    Process(s, std::move(job));
  }
}

void MetricsPipeline::Stop() {
  std::vector<std::shared_ptr<SessionMetrics>> open;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    open.swap(open_);
  }
  ready_cv_.SignalAll();
  stop_cv_.SignalAll();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
  for (const auto& s : open) s->Close();
}

bool MetricsPipeline::stopping() const {
  absl::MutexLock lock(&mu_);
  return stopping_;
}

void MetricsPipeline::WorkerLoop() {
  for (;;) {
    std::shared_ptr<SessionMetrics> s;
    {
      absl::MutexLock lock(&mu_);
      if (!stopping_ && ready_.empty()) {
        ++idle_workers_;
        while (!stopping_ && ready_.empty()) ready_cv_.Wait(&mu_);
        --idle_workers_;
        // Let the next steps' jobs arrive: one wake-up for all of them.
        const absl::Time gathered = absl::Now() + absl::FromChrono(kGatherWindow);
        while (!stopping_ && !stop_cv_.WaitWithDeadline(&mu_, gathered)) {
        }
      }
      // Stopping drains: every job already queued (steps acknowledged
      // before the shutdown) is processed and published first.
      if (ready_.empty()) return;
      s = std::move(ready_.front());
      ready_.pop_front();
    }
    {
      // Taken and processed under the session's turn, so that a step's
      // thread helping (Help) cannot overtake the job: step order holds.
      absl::MutexLock turn(&s->process_mu_);
      std::optional<MetricsJob> job;
      {
        absl::MutexLock lock(&s->mu_);
        if (!s->jobs_.empty()) {  // (a helper may have emptied the queue)
          job = std::move(s->jobs_.front());
          s->jobs_.pop_front();
          Decide(*s, *job, s->jobs_.size());
        }
      }
      if (job.has_value()) {
        --tally_->queued_jobs;
        Process(*s, *std::move(job));
      }
    }
    bool again = false;
    {
      absl::MutexLock lock(&s->mu_);
      again = !s->jobs_.empty() && !s->closed_;
      s->scheduled_ = again;
      if (!again) {  // closed: its queued jobs are dropped
        tally_->queued_jobs -= static_cast<int64_t>(s->jobs_.size());
        s->jobs_.clear();
      }
    }
    if (again) {  // one job per turn: sessions share the workers fairly
      absl::MutexLock lock(&mu_);
      ready_.push_back(std::move(s));
      if (idle_workers_ > 0) ready_cv_.Signal();
    }
  }
}

void MetricsPipeline::Decide(SessionMetrics& s, MetricsJob& job, size_t queued) const {
  if (!job.exact_due || job.probability > 0.0) return;
  job.probability =
      std::min(sampling_.ceiling,
               InclusionProbability(static_cast<int64_t>(queued), max_pending_, sampling_.floor));
  // 53 random bits: U uniform on [0, 1).
  const double u = static_cast<double>(s.sampler_.Next() >> 11) * 0x1p-53;
  job.sampled = u < job.probability;
  if (!job.sampled) job.before.reset();  // only exact metrics read it
}

void MetricsPipeline::Process(SessionMetrics& s, MetricsJob job) {
  v1::StepMetrics msg;
  msg.set_session_id(s.id_);
  msg.set_t(job.t);
  ToProto(job.report, msg.mutable_report());
  if (job.x_groups != nullptr) {
    for (v1::Hyperparameter& h : HyperparametersOf(*job.x_groups, job.x)) {
      *msg.add_hyperparameters() = std::move(h);
    }
  }
  s.evaluator_->Observe(*job.data);
  if (job.exact_due) {
    msg.set_exact_probability(job.probability);
    bool skipped = true;
    if (!job.sampled) {
      // Below the ceiling, the backlog lowered p_t.
      msg.set_exact_skipped_reason(
          absl::StrCat(job.probability < sampling_.ceiling ? "metrics worker behind: " : "",
                       "step not in the random sample evaluated (p = ", job.probability, ")"));
    } else if (job.before == nullptr) {
      msg.set_exact_skipped_reason("exact metrics: the step's state was not kept");
    } else {
      absl::StatusOr<ClassMetrics> m =
          s.evaluator_->Evaluate(*job.before, job.report, *job.data, s.previous_.get());
      if (m.ok()) {
        const RunningMetrics running = s.accumulate_(&*m, job.probability);
        ToProto(*m, running, msg.mutable_exact());
        skipped = false;
      } else {
        msg.set_exact_skipped_reason(std::string(m.status().message()));
      }
    }
    if (skipped) {
      // The coverage and the estimate go on while steps are skipped.
      const RunningMetrics running = s.accumulate_(nullptr, job.probability);
      ToProto(static_cast<ProblemClass>(job.report.detail.index()), running, msg.mutable_running());
    }
  }
  s.previous_ = std::move(job.data);
  if (observer_) observer_(msg);
  s.Publish(msg);
}

namespace {

v1::StepMetrics Parse(const std::string& bytes) {
  v1::StepMetrics m;
  m.ParseFromString(bytes);  // our own serialization of a valid message
  return m;
}

}  // namespace

SessionMetrics::~SessionMetrics() {
  tally_->bytes -= static_cast<int64_t>(published_bytes_);
  tally_->queued_jobs -= static_cast<int64_t>(jobs_.size());
  if (full_) --tally_->full_sessions;
}

void SessionMetrics::Publish(const v1::StepMetrics& m) {
  Entry entry{m.t(), m.SerializeAsString()};
  const size_t size = entry.bytes.size() + kEntryOverhead;
  absl::MutexLock lock(&mu_);
  if (m.has_exact()) latest_exact_ = m.exact();
  published_.push_back(std::move(entry));
  published_bytes_ += size;
  int64_t change = static_cast<int64_t>(size);
  while (published_bytes_ > buffered_bytes_ && published_.size() > 1) {
    const size_t dropped = published_.front().bytes.size() + kEntryOverhead;
    published_.pop_front();
    published_bytes_ -= dropped;
    change -= static_cast<int64_t>(dropped);
    if (!full_) {
      full_ = true;
      ++tally_->full_sessions;
    }
  }
  tally_->bytes += change;
  cv_.SignalAll();
}

std::deque<SessionMetrics::Entry>::const_iterator SessionMetrics::FirstAfter(
    int64_t after_t) const {
  return std::upper_bound(published_.begin(), published_.end(), after_t,
                          [](int64_t t, const Entry& e) { return t < e.t; });
}

std::optional<v1::StepMetrics> SessionMetrics::NextAfter(int64_t after_t,
                                                         const std::function<bool()>& cancelled,
                                                         int64_t until_t, bool* ended) {
  absl::MutexLock lock(&mu_);
  for (;;) {
    const auto it = FirstAfter(after_t);
    const bool found = it != published_.end();
    if (found && (until_t <= 0 || it->t <= until_t)) return Parse(it->bytes);
    if (until_t > 0 && (after_t >= until_t || found || until_t <= start_t_)) {
      if (ended != nullptr) *ended = true;
      return std::nullopt;
    }
    if (closed_ || cancelled()) return std::nullopt;
    // Wake up periodically to notice a cancelled RPC.
    cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
  }
}

std::vector<v1::StepMetrics> SessionMetrics::Snapshot(int64_t after_t, size_t max) const {
  std::vector<std::string> copies;  // parsed outside the lock
  {
    absl::MutexLock lock(&mu_);
    for (auto it = FirstAfter(after_t); it != published_.end() && copies.size() < max; ++it) {
      copies.push_back(it->bytes);
    }
  }
  std::vector<v1::StepMetrics> out;
  out.reserve(copies.size());
  for (const std::string& bytes : copies) out.push_back(Parse(bytes));
  return out;
}

std::optional<v1::ExactMetrics> SessionMetrics::LatestExact() const {
  absl::MutexLock lock(&mu_);
  return latest_exact_;
}

void SessionMetrics::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  cv_.SignalAll();
}

bool SessionMetrics::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

}  // namespace f2obo::server
