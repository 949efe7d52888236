// Warm starts of the exact metrics' solves: from the last
// evaluated step's solutions the answers are the same to the solvers'
// tolerances, in fewer iterations on a slowly drifting stream.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <variant>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/class_metrics.h"
#include "core/metrics/linear_solve.h"
#include "core/problem.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

// A symmetric positive definite n x n matrix with eigenvalues in [1, 100].
Matrix Spd(int n, std::mt19937_64& rng) {
  const Matrix q = testing::WellConditioned(n, n, 1.0, 10.0, rng);
  return q.transpose() * q;
}

TEST(ConjugateGradientFrom, ANearGuessMeetsTheSameToleranceInFewerIterations) {
  std::mt19937_64 rng(31);
  const int n = 60;
  const Matrix a = Spd(n, rng);
  const LinearOperator apply = [&](const Vector& v, Vector* out) { *out = a * v; };
  Vector b = Vector::Random(n);
  Vector cold;
  CgOutcome cold_outcome;
  const int cold_it = ConjugateGradient(apply, b, 1e-12, 1000, &cold, &cold_outcome);
  ASSERT_TRUE(cold_outcome.converged);
  // The next system differs a little (a drifting right-hand side): start
  // from the previous solution.
  const Vector b2 = b + 1e-3 * Vector::Random(n);
  Vector warm = cold, fresh;
  CgOutcome warm_outcome, fresh_outcome;
  const int warm_it = ConjugateGradientFrom(apply, b2, 1e-12, 1000, &warm, &warm_outcome);
  const int fresh_it = ConjugateGradient(apply, b2, 1e-12, 1000, &fresh, &fresh_outcome);
  ASSERT_TRUE(warm_outcome.converged);
  ASSERT_TRUE(fresh_outcome.converged);
  EXPECT_LE((a * warm - b2).norm(), 1e-11 * b2.norm());
  EXPECT_LE((warm - fresh).norm(), 1e-9 * fresh.norm());
  EXPECT_LT(warm_it, fresh_it) << "cold " << cold_it;
}

TEST(ConjugateGradientFrom, AGuessWorseThanZeroIsDropped) {
  std::mt19937_64 rng(32);
  const int n = 20;
  const Matrix a = Spd(n, rng);
  const LinearOperator apply = [&](const Vector& v, Vector* out) { *out = a * v; };
  const Vector b = Vector::Random(n);
  Vector far = 1e6 * Vector::Ones(n), cold;
  CgOutcome far_outcome, cold_outcome;
  const int far_it = ConjugateGradientFrom(apply, b, 1e-12, 1000, &far, &far_outcome);
  const int cold_it = ConjugateGradient(apply, b, 1e-12, 1000, &cold, &cold_outcome);
  EXPECT_EQ(far_it, cold_it);
  EXPECT_TRUE(far_outcome.converged);
  EXPECT_EQ(far, cold);  // the same iterates from w = 0
  // A guess of another size, or not finite, likewise.
  Vector wrong = Vector::Ones(n + 1), nan = Vector::Constant(n, std::nan(""));
  EXPECT_EQ(ConjugateGradientFrom(apply, b, 1e-12, 1000, &wrong), cold_it);
  EXPECT_EQ(ConjugateGradientFrom(apply, b, 1e-12, 1000, &nan), cold_it);
  EXPECT_EQ(nan, cold);
}

// A logistic_hpo session stepped on a slowly drifting stream (the class
// means move a little each step), its exact metrics computed each step by
// one evaluator (warm: it keeps the last step's solutions) and by a fresh
// evaluator (cold: from y_t and w = 0, the old way).
TEST(ExactMetricsWarmStart, SameMetricsInFewerIterationsOnADriftingStream) {
  constexpr int kSteps = 30;
  constexpr int kFeatures = 12, kClasses = 4;
  FamilyConfig family;
  family.name = "logistic_hpo";
  family.features = kFeatures;
  family.classes = kClasses;
  const SessionConfig config = testing::ConfigFor("f2obo", family, ConstraintSet::Box(0.0, 0.1));
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> warm =
      (*session)->problem().NewMetricsEvaluator();
  ASSERT_TRUE(warm.ok()) << warm.status();

  std::mt19937_64 rng(33);
  const Batch base_inner = testing::ClassificationBatch(200, kFeatures, kClasses, false, rng);
  const Batch base_upper = testing::ClassificationBatch(100, kFeatures, kClasses, false, rng);
  const Vector drift = 0.02 * Vector::Random(kFeatures);
  std::shared_ptr<StepData> previous;
  int warm_newton = 0, warm_cg = 0, cold_newton = 0, cold_cg = 0;
  for (int t = 1; t <= kSteps; ++t) {
    auto data = std::make_shared<StepData>();
    data->inner = base_inner;
    data->upper = base_upper;
    data->inner.dense.rowwise() += (t * drift).transpose();
    data->upper.dense.rowwise() += (t * drift).transpose();
    const std::shared_ptr<const SessionState> before = (*session)->snapshot();
    absl::StatusOr<StepReport> report = (*session)->Step(*data);
    ASSERT_TRUE(report.ok()) << report.status();
    absl::StatusOr<std::unique_ptr<MetricsEvaluator>> cold =
        (*session)->problem().NewMetricsEvaluator();
    ASSERT_TRUE(cold.ok());
    absl::StatusOr<ClassMetrics> w = (*warm)->Evaluate(*before, *report, *data, previous.get());
    absl::StatusOr<ClassMetrics> c = (*cold)->Evaluate(*before, *report, *data, previous.get());
    ASSERT_TRUE(w.ok()) << w.status();
    ASSERT_TRUE(c.ok()) << c.status();
    const ExactMetrics& mw = std::get<ExactMetrics>(*w);
    const ExactMetrics& mc = std::get<ExactMetrics>(*c);
    ASSERT_TRUE(mw.RegretConverged()) << "t = " << t;
    ASSERT_TRUE(mc.RegretConverged()) << "t = " << t;
    const auto near = [](double a, double b) {
      return std::abs(a - b) <= 1e-7 * std::max(1.0, std::abs(b));
    };
    EXPECT_TRUE(near(mw.regret_term, mc.regret_term))
        << t << ": " << mw.regret_term << " vs " << mc.regret_term;
    EXPECT_TRUE(near(mw.value, mc.value)) << t;
    EXPECT_TRUE(near(mw.true_gradient_norm, mc.true_gradient_norm)) << t;
    EXPECT_TRUE(near(mw.hypergradient_error, mc.hypergradient_error)) << t;
    if (t > 1) {
      EXPECT_TRUE(near(*mw.variation, *mc.variation)) << t;
      EXPECT_TRUE(near(*mw.drift, *mc.drift)) << t;
      // From step 2 on the warm evaluator has a previous solution.
      warm_newton += mw.newton_iterations;
      warm_cg += mw.cg_iterations;
      cold_newton += mc.newton_iterations;
      cold_cg += mc.cg_iterations;
    }
    previous = data;
  }
  std::printf("steps 2-%d: Newton %d -> %d, CG %d -> %d (cold -> warm)\n", kSteps, cold_newton,
              warm_newton, cold_cg, warm_cg);
  EXPECT_LE(warm_newton, cold_newton);
  EXPECT_LT(warm_cg, cold_cg);
}

}  // namespace
}  // namespace f2obo
