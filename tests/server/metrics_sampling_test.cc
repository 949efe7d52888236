// The metrics pipeline's sampling design: with its worker
// held, a session's due steps are evaluated as a random sample with known
// probabilities -- recorded on each published step, never 0, helped steps
// included -- and the running sums carry the coverage and the
// Horvitz-Thompson estimate sum r_t / p_t, also on the skipped steps.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/bilevel/bilevel_state.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "server/metrics_pipeline.h"

namespace f2obo::server {
namespace {

SessionConfig QuadraticConfig() {
  SessionConfig config;
  config.family.name = "quadratic";
  config.family.x_dim = 2;
  config.family.y_dim = 2;
  config.algorithm = "f2obo";
  config.options = DefaultAlgorithmOptions("f2obo");
  return config;
}

// A quadratic step whose data move with t (so the terms differ).
std::shared_ptr<const StepData> QuadraticData(int t) {
  auto data = std::make_shared<StepData>();
  data->inner.M = Matrix::Identity(2, 2) * (1.0 + 0.1 * std::sin(t));
  data->inner.c = Vector::Constant(2, 0.5 * std::cos(0.3 * t));
  data->upper.d = Vector::Constant(2, 1.0 + 0.2 * std::sin(0.7 * t));
  return data;
}

TEST(MetricsSampling, ABehindWorkerEvaluatesAKnownProbabilitySample) {
  constexpr int kMaxPending = 8;
  constexpr int kSteps = 120;
  constexpr double kFloor = 0.25;
  std::atomic<bool> hold{true}, held{false};
  MetricsPipeline pipeline(
      1, kMaxPending,
      [&](const v1::StepMetrics& m) {
        if (m.session_id() != "a") return;
        held = true;
        while (hold) std::this_thread::yield();
      },
      ExactSampling{kFloor, 1.0});
  absl::StatusOr<std::unique_ptr<Session>> a = Session::Create(QuadraticConfig());
  absl::StatusOr<std::unique_ptr<Session>> b = Session::Create(QuadraticConfig());
  ASSERT_TRUE(a.ok() && b.ok());
  // b's running sums, kept as the session manager keeps them (the
  // accumulator runs on whichever thread processes b's job, one at a time).
  std::mutex sums_mu;
  const auto accumulate = [&](Session* s) {
    return [&sums_mu, s](const ClassMetrics* m, double p) {
      std::lock_guard<std::mutex> lock(sums_mu);
      if (m != nullptr) {
        s->AddMetrics(*m, p);
      } else {
        s->AddSkipped();
      }
      return s->metrics();
    };
  };
  std::shared_ptr<SessionMetrics> ca =
      pipeline.Open("a", *(*a)->problem().NewMetricsEvaluator(), accumulate(a->get()));
  std::shared_ptr<SessionMetrics> cb =
      pipeline.Open("b", *(*b)->problem().NewMetricsEvaluator(), accumulate(b->get()));
  MetricsJob first;
  first.t = 1;
  first.data = QuadraticData(1);
  pipeline.Enqueue(ca, std::move(first));
  while (!held) std::this_thread::yield();
  for (int t = 1; t <= kSteps; ++t) {
    MetricsJob job;
    job.t = t;
    job.data = QuadraticData(t);
    job.before = (*b)->snapshot();
    absl::StatusOr<StepReport> report = (*b)->Step(*job.data);
    ASSERT_TRUE(report.ok()) << report.status();
    job.report = *std::move(report);
    job.exact_due = true;
    pipeline.Enqueue(cb, std::move(job));
    ASSERT_LE(pipeline.buffers().queued_jobs.load(), 2 * kMaxPending + 1);
  }
  hold = false;
  pipeline.Stop();

  const std::vector<v1::StepMetrics> published = cb->Snapshot(0);
  ASSERT_EQ(published.size(), static_cast<size_t>(kSteps));
  int evaluated = 0, skipped = 0, evaluated_below_one = 0;
  double estimate = 0.0, variance = 0.0, blreg = 0.0;
  for (const v1::StepMetrics& m : published) {
    const double p = m.exact_probability();
    ASSERT_GE(p, kFloor) << "t = " << m.t();
    ASSERT_LE(p, 1.0) << "t = " << m.t();
    if (m.has_exact()) {
      ++evaluated;
      if (p < 1.0) ++evaluated_below_one;
      EXPECT_EQ(m.exact_skipped_reason(), "") << "t = " << m.t();
      EXPECT_FALSE(m.has_running());
      ASSERT_TRUE(m.exact().bilevel().cg_converged() && m.exact().bilevel().inner_converged());
      const double r = m.exact().bilevel().regret_term();
      blreg += r;
      estimate += r / p;
      variance += (1.0 - p) / (p * p) * r * r;
      EXPECT_EQ(m.exact().running().evaluated_steps(), evaluated);
      EXPECT_EQ(m.exact().running().skipped_steps(), skipped);
    } else {
      ++skipped;
      EXPECT_LT(p, 1.0) << "a step at p = 1 is always evaluated";
      EXPECT_NE(m.exact_skipped_reason().find("metrics worker behind"), std::string::npos)
          << m.exact_skipped_reason();
      // Coverage and estimate go on while steps are skipped.
      ASSERT_TRUE(m.has_running()) << "t = " << m.t();
      EXPECT_EQ(m.running().evaluated_steps(), evaluated);
      EXPECT_EQ(m.running().skipped_steps(), skipped);
    }
    const v1::RunningMetrics& running = m.has_exact() ? m.exact().running() : m.running();
    EXPECT_NEAR(running.estimate(), estimate, 1e-9 * std::max(1.0, estimate)) << m.t();
    EXPECT_NEAR(running.estimate_standard_error(), std::sqrt(variance),
                1e-9 * std::max(1.0, std::sqrt(variance)))
        << m.t();
    EXPECT_NEAR(running.bilevel().blreg(), blreg, 1e-9 * std::max(1.0, blreg)) << m.t();
  }
  // The worker was held: most steps were decided at the floor; some of
  // those were sampled (evaluated by a helping step's thread), most not.
  EXPECT_GT(skipped, kSteps / 2);
  EXPECT_GT(evaluated_below_one, 0);
  EXPECT_EQ(evaluated + skipped, kSteps);
  const RunningMetrics& sums = (*b)->metrics();
  EXPECT_EQ(sums.evaluated_steps, evaluated);
  EXPECT_EQ(sums.sums[kSkippedSteps], skipped);
  // Skipping made the plain sum fall short; the estimate scales it back.
  EXPECT_GT(estimate, blreg);
}

TEST(MetricsSampling, ACeilingBelowOneSamplesEvenAnIdleWorker) {
  MetricsPipeline pipeline(1, 64, nullptr, ExactSampling{0.05, 0.5});
  absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(QuadraticConfig());
  ASSERT_TRUE(s.ok());
  std::shared_ptr<SessionMetrics> c = pipeline.Open("s", *(*s)->problem().NewMetricsEvaluator(),
                                                    [&](const ClassMetrics* m, double p) {
                                                      if (m != nullptr) {
                                                        (*s)->AddMetrics(*m, p);
                                                      } else {
                                                        (*s)->AddSkipped();
                                                      }
                                                      return (*s)->metrics();
                                                    });
  constexpr int kSteps = 200;
  for (int t = 1; t <= kSteps; ++t) {
    MetricsJob job;
    job.t = t;
    job.data = QuadraticData(t);
    job.before = (*s)->snapshot();
    job.report = *(*s)->Step(*job.data);
    job.exact_due = true;
    pipeline.Enqueue(c, std::move(job));
    // One at a time: the worker is never behind.
    ASSERT_TRUE(c->NextAfter(t - 1, [] { return false; }).has_value());
  }
  pipeline.Stop();
  int evaluated = 0;
  for (const v1::StepMetrics& m : c->Snapshot(0)) {
    EXPECT_EQ(m.exact_probability(), 0.5);
    evaluated += m.has_exact() ? 1 : 0;
  }
  // Binomial(200, 0.5): within 5 standard deviations (~7) of 100.
  EXPECT_GT(evaluated, 65);
  EXPECT_LT(evaluated, 135);
}

}  // namespace
}  // namespace f2obo::server
