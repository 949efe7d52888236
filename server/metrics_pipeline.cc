#include "server/metrics_pipeline.h"

#include <algorithm>
#include <chrono>

#include "f2obo/v1/convert.h"

namespace f2obo::server {

MetricsPipeline::MetricsPipeline(int threads, int max_pending_jobs, MetricsObserver observer)
    : max_pending_(max_pending_jobs), observer_(std::move(observer)) {
  for (int i = 0; i < std::max(1, threads); ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

MetricsPipeline::~MetricsPipeline() { Stop(); }

std::shared_ptr<SessionMetrics> MetricsPipeline::Open(
    std::string session_id, std::unique_ptr<MetricsEvaluator> evaluator,
    std::function<RunningMetrics(const ClassMetrics&)> accumulate) {
  std::shared_ptr<SessionMetrics> s(new SessionMetrics(
      std::move(session_id), std::move(evaluator), std::move(accumulate)));
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(std::remove_if(open_.begin(), open_.end(),
                             [](const auto& p) { return p.use_count() == 1 || p->closed(); }),
              open_.end());
  open_.push_back(s);
  return s;
}

void MetricsPipeline::Enqueue(const std::shared_ptr<SessionMetrics>& s, MetricsJob job) {
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(s->mu_);
    if (s->closed_) return;
    if (job.exact_due && static_cast<int>(s->jobs_.size()) >= max_pending_) {
      // Keep the stream of per-step messages complete, drop the expensive part.
      job.exact_due = false;
      job.skipped_reason = "metrics worker behind: exact metrics skipped for this step";
      job.before.reset();  // only exact metrics read it: a backlog holds no state copies
    }
    s->jobs_.push_back(std::move(job));
    if (!s->scheduled_) schedule = s->scheduled_ = true;
  }
  if (schedule) {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(s);
    // A busy or gathering worker comes back to ready_ by itself.
    if (idle_workers_ > 0) ready_cv_.notify_one();
  }
}

void MetricsPipeline::Stop() {
  std::vector<std::shared_ptr<SessionMetrics>> open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    open.swap(open_);
  }
  ready_cv_.notify_all();
  stop_cv_.notify_all();
  for (std::thread& w : workers_) w.join();
  workers_.clear();
  for (const auto& s : open) s->Close();
}

bool MetricsPipeline::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

void MetricsPipeline::WorkerLoop() {
  for (;;) {
    std::shared_ptr<SessionMetrics> s;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!stopping_ && ready_.empty()) {
        ++idle_workers_;
        ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
        --idle_workers_;
        // Let the next steps' jobs arrive: one wake-up for all of them.
        stop_cv_.wait_for(lock, kGatherWindow, [&] { return stopping_; });
      }
      // Stopping drains: every job already queued (steps acknowledged
      // before the shutdown) is processed and published first.
      if (ready_.empty()) return;
      s = std::move(ready_.front());
      ready_.pop_front();
    }
    MetricsJob job;
    {
      std::lock_guard<std::mutex> lock(s->mu_);
      job = std::move(s->jobs_.front());
      s->jobs_.pop_front();
    }
    Process(*s, std::move(job));
    bool again = false;
    {
      std::lock_guard<std::mutex> lock(s->mu_);
      again = !s->jobs_.empty() && !s->closed_;
      s->scheduled_ = again;
      if (!again) s->jobs_.clear();
    }
    if (again) {  // one job per turn: sessions share the workers fairly
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(s));
      if (idle_workers_ > 0) ready_cv_.notify_one();
    }
  }
}

void MetricsPipeline::Process(SessionMetrics& s, MetricsJob job) {
  v1::StepMetrics msg;
  msg.set_session_id(s.id_);
  msg.set_t(job.t);
  ToProto(job.report, msg.mutable_report());
  msg.set_exact_skipped_reason(job.skipped_reason);
  s.evaluator_->Observe(*job.data);
  if (job.exact_due) {
    absl::StatusOr<ClassMetrics> m =
        s.evaluator_->Evaluate(*job.before, job.report, *job.data, s.previous_.get());
    if (m.ok()) {
      const RunningMetrics running = s.accumulate_(*m);
      ToProto(*m, running, msg.mutable_exact());
    } else {
      msg.set_exact_skipped_reason(std::string(m.status().message()));
    }
  }
  s.previous_ = std::move(job.data);
  if (observer_) observer_(msg);
  s.Publish(std::move(msg));
}

void SessionMetrics::Publish(v1::StepMetrics m) {
  std::lock_guard<std::mutex> lock(mu_);
  if (m.has_exact()) latest_exact_ = m.exact();
  published_.push_back(std::move(m));
  if (published_.size() > kBuffered) published_.pop_front();
  cv_.notify_all();
}

std::optional<v1::StepMetrics> SessionMetrics::NextAfter(
    int64_t after_t, const std::function<bool()>& cancelled) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const auto it = std::upper_bound(
        published_.begin(), published_.end(), after_t,
        [](int64_t t, const v1::StepMetrics& m) { return t < m.t(); });
    if (it != published_.end()) return *it;
    if (closed_ || cancelled()) return std::nullopt;
    // Wake up periodically to notice a cancelled RPC.
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
}

std::vector<v1::StepMetrics> SessionMetrics::Snapshot(int64_t after_t, size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::upper_bound(published_.begin(), published_.end(), after_t,
                             [](int64_t t, const v1::StepMetrics& m) { return t < m.t(); });
  std::vector<v1::StepMetrics> out;
  for (; it != published_.end() && out.size() < max; ++it) out.push_back(*it);
  return out;
}

std::optional<v1::ExactMetrics> SessionMetrics::LatestExact() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_exact_;
}

void SessionMetrics::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  cv_.notify_all();
}

bool SessionMetrics::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

}  // namespace f2obo::server
