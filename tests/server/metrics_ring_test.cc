// The metrics pipeline's memory bounds: SessionMetrics' ring of published
// step metrics is bounded in bytes (serialized sizes plus a fixed overhead a
// message), newest messages kept in step order, with its tally
// (f2obo_metrics_buffer_bytes / _buffers_full) exact while sessions come and
// go; a session's queue of jobs is bounded by its steps' threads helping
// when the workers cannot keep up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/problem_registry.h"
#include "core/session.h"
#include "server/metrics/registry.h"
#include "server/metrics_pipeline.h"
#include "server/process_memory.h"

namespace f2obo::server {
namespace {

std::shared_ptr<SessionMetrics> OpenQuadraticChannel(MetricsPipeline& pipeline,
                                                     const std::string& id) {
  SessionConfig config;
  config.family.name = "quadratic";
  config.family.x_dim = 2;
  config.family.y_dim = 2;
  config.algorithm = "f2obo";
  config.options = DefaultAlgorithmOptions("f2obo");
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  EXPECT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
      (*session)->problem().NewMetricsEvaluator();
  EXPECT_TRUE(evaluator.ok()) << evaluator.status();
  return pipeline.Open(id, *std::move(evaluator),
                       [](const ClassMetrics*, double) { return RunningMetrics{}; });
}

// Publishes steps 1..n (no exact metrics due) and waits for all of them.
void PublishSteps(MetricsPipeline& pipeline, const std::shared_ptr<SessionMetrics>& channel,
                  int n) {
  const auto data = std::make_shared<const StepData>();
  for (int t = 1; t <= n; ++t) {
    MetricsJob job;
    job.t = t;
    job.data = data;
    job.report.rows_processed = t;  // sizes vary with t, as real ones do
    pipeline.Enqueue(channel, std::move(job));
  }
  const auto never = [] { return false; };
  ASSERT_TRUE(channel->NextAfter(n - 1, never).has_value());
}

int64_t AccountedBytes(const std::vector<v1::StepMetrics>& messages) {
  int64_t bytes = 0;
  for (const v1::StepMetrics& m : messages) {
    bytes += static_cast<int64_t>(m.ByteSizeLong() + SessionMetrics::kEntryOverhead);
  }
  return bytes;
}

// A ring of `budget` bytes overflowed: it keeps the newest steps that fit.
void ExpectRingKeepsTheNewestStepsThatFit(size_t budget) {
  MetricsPipeline pipeline(1, 64, nullptr, ExactSampling{}, budget);
  std::shared_ptr<SessionMetrics> channel = OpenQuadraticChannel(pipeline, "ring");
  // Enough steps to overflow the budget several times over whatever a
  // message's size (each costs at least kEntryOverhead).
  const int n = static_cast<int>(2 * budget / 64);
  PublishSteps(pipeline, channel, n);
  const std::vector<v1::StepMetrics> kept = channel->Snapshot(0);
  ASSERT_FALSE(kept.empty());
  ASSERT_LT(kept.size(), static_cast<size_t>(n));
  for (size_t i = 0; i < kept.size(); ++i) {
    ASSERT_EQ(kept[i].t(), n - static_cast<int64_t>(kept.size() - 1 - i)) << "i = " << i;
    ASSERT_EQ(kept[i].report().rows_processed(), kept[i].t());
    ASSERT_EQ(kept[i].session_id(), "ring");
  }
  const int64_t bytes = AccountedBytes(kept);
  EXPECT_LE(bytes, static_cast<int64_t>(budget));
  // Full: within a message or two of the budget (the messages differ by a
  // few bytes).
  const int64_t one =
      static_cast<int64_t>(kept.front().ByteSizeLong() + SessionMetrics::kEntryOverhead);
  EXPECT_GT(bytes, static_cast<int64_t>(budget) - 2 * one);
  EXPECT_EQ(pipeline.buffers().bytes.load(), bytes);
  EXPECT_EQ(pipeline.buffers().full_sessions.load(), 1);
  // A watch from before the oldest kept step starts at the oldest kept one.
  const std::optional<v1::StepMetrics> first = channel->NextAfter(0, [] { return true; });
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->t(), kept.front().t());
  EXPECT_EQ(channel->Snapshot(kept.back().t() - 3).size(), 3u);
}

TEST(MetricsRing, KeepsTheNewestStepsThatFitItsByteBudget) {
  ExpectRingKeepsTheNewestStepsThatFit(SessionMetrics::kBufferedBytes);
}

// --metrics_buffer_bytes: a smaller budget holds fewer steps, as exactly.
TEST(MetricsRing, ASmallerBudgetSetByThePipelineBoundsTheRing) {
  ExpectRingKeepsTheNewestStepsThatFit(8 * 1024);
}

TEST(MetricsRing, ARingBelowItsBudgetKeepsEveryStepAndIsNotFull) {
  MetricsPipeline pipeline(1, 64, nullptr);
  std::shared_ptr<SessionMetrics> channel = OpenQuadraticChannel(pipeline, "small");
  PublishSteps(pipeline, channel, 10);
  const std::vector<v1::StepMetrics> kept = channel->Snapshot(0);
  ASSERT_EQ(kept.size(), 10u);
  EXPECT_EQ(kept.front().t(), 1);
  EXPECT_EQ(pipeline.buffers().bytes.load(), AccountedBytes(kept));
  EXPECT_EQ(pipeline.buffers().full_sessions.load(), 0);
}

TEST(MetricsRing, TheTallyDropsASessionsRingWhenItGoes) {
  MetricsPipeline pipeline(1, 64, nullptr);
  std::shared_ptr<SessionMetrics> small = OpenQuadraticChannel(pipeline, "small");
  std::shared_ptr<SessionMetrics> full = OpenQuadraticChannel(pipeline, "full");
  PublishSteps(pipeline, small, 10);
  PublishSteps(pipeline, full, static_cast<int>(2 * SessionMetrics::kBufferedBytes / 64));
  const int64_t small_bytes = AccountedBytes(small->Snapshot(0));
  EXPECT_EQ(pipeline.buffers().full_sessions.load(), 1);
  EXPECT_EQ(pipeline.buffers().bytes.load(), small_bytes + AccountedBytes(full->Snapshot(0)));
  pipeline.Stop();  // the pipeline lets go of its channels
  full.reset();
  EXPECT_EQ(pipeline.buffers().full_sessions.load(), 0);
  EXPECT_EQ(pipeline.buffers().bytes.load(), small_bytes);
  small.reset();
  EXPECT_EQ(pipeline.buffers().bytes.load(), 0);
}

// The only worker is held inside session "a"'s first job (a condition, not a
// sleep): session "b"'s queue would grow without end; instead each step
// beyond twice max_pending processes b's oldest job itself, in step order.
TEST(MetricsQueue, StepsHelpWhenTheWorkersFallBehindSoTheQueueStaysBounded) {
  constexpr int kMaxPending = 8;
  constexpr int kSteps = 200;
  std::atomic<bool> hold{true}, held{false};
  std::vector<int64_t> b_order;  // written by whichever thread processes b's jobs
  MetricsPipeline pipeline(1, kMaxPending, [&](const v1::StepMetrics& m) {
    if (m.session_id() == "a") {
      held = true;
      while (hold) std::this_thread::yield();
    } else {
      b_order.push_back(m.t());
    }
  });
  std::shared_ptr<SessionMetrics> a = OpenQuadraticChannel(pipeline, "a");
  std::shared_ptr<SessionMetrics> b = OpenQuadraticChannel(pipeline, "b");
  const auto data = std::make_shared<const StepData>();
  MetricsJob first;
  first.t = 1;
  first.data = data;
  pipeline.Enqueue(a, std::move(first));
  while (!held) std::this_thread::yield();
  int64_t most_queued = 0;
  for (int t = 1; t <= kSteps; ++t) {
    MetricsJob job;
    job.t = t;
    job.data = data;
    job.exact_due = true;  // no state: a sampled one cannot be computed either
    pipeline.Enqueue(b, std::move(job));
    most_queued = std::max(most_queued, pipeline.buffers().queued_jobs.load());
  }
  EXPECT_LE(most_queued, 2 * kMaxPending);
  // Helped while the worker was held: the steps beyond the bound, in order.
  ASSERT_EQ(b_order.size(), static_cast<size_t>(kSteps - 2 * kMaxPending));
  for (size_t i = 0; i < b_order.size(); ++i) ASSERT_EQ(b_order[i], static_cast<int64_t>(i + 1));
  hold = false;
  pipeline.Stop();  // drains the rest
  ASSERT_EQ(b_order.size(), static_cast<size_t>(kSteps));
  for (size_t i = 0; i < b_order.size(); ++i) ASSERT_EQ(b_order[i], static_cast<int64_t>(i + 1));
  EXPECT_EQ(pipeline.buffers().queued_jobs.load(), 0);
  const std::vector<v1::StepMetrics> published = b->Snapshot(0);
  ASSERT_EQ(published.size(), static_cast<size_t>(kSteps));
  for (const v1::StepMetrics& m : published) {
    EXPECT_FALSE(m.has_exact()) << "t = " << m.t();
    // Each due step says why its exact metrics are absent, and with which
    // probability it was sampled (metrics_sampling_test.cc checks the rest).
    EXPECT_GT(m.exact_probability(), 0.0) << "t = " << m.t();
    EXPECT_NE(m.exact_skipped_reason(), "") << "t = " << m.t();
  }
}

TEST(MetricsRing, TheGaugesRenderTheTally) {
  MetricsPipeline pipeline(1, 64, nullptr);
  std::shared_ptr<SessionMetrics> channel = OpenQuadraticChannel(pipeline, "gauged");
  PublishSteps(pipeline, channel, 5);
  metrics::Registry registry;
  ProcessMemoryGauges gauges(&registry, &pipeline.buffers());
  gauges.Refresh();
  const std::string text = registry.Render();
  EXPECT_NE(text.find("\nf2obo_metrics_buffer_bytes " +
                      std::to_string(pipeline.buffers().bytes.load()) + "\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nf2obo_metrics_buffers_full 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nf2obo_metrics_jobs_queued 0\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace f2obo::server
