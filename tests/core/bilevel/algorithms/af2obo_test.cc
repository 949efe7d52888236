// AF2OBO (paper Algorithm 2) against fixed-K F2OBO on the paper's Sec. 4.2
// oscillating example, where y*_t(x) = (-1)^t x drifts by 2|x| every step.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/session.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

constexpr int kHorizon = 2000;

// f = exp(-y^2) (c = 1), g = (1/2)(y - (-1)^t x)^2 (mu = 1), X = [-1, 1],
// x_1 = 0.3, y_1 = z_1 = 0, lambda_1 = 5, tau = 1, alpha = 1,
// beta_t = 0.5 / lambda_t, gamma = 0.1.  Returns BLReg(t) for t = 1..T.
std::vector<double> OscillatingRegret(const std::string& algorithm,
                                      AlgorithmOptions* used = nullptr) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = fam.y_dim = 1;
  fam.mu = 1.0;
  fam.bump_upper = true;
  fam.bump_scale = 1.0;
  SessionConfig config = testing::ConfigFor(algorithm, fam, ConstraintSet::Box(-1, 1));
  config.x0 = Vector::Constant(1, 0.3);
  config.y0 = Vector::Zero(1);
  AlgorithmOptions& o = config.options;
  o.lambda1 = 5;
  o.tau = 1;
  o.lambda_schedule = LambdaSchedule::kPaper;  // Theorem 4.1's lambda_t = lambda_1 t^tau
  o.alpha = 1;
  o.beta = 0.5;
  o.gamma = 0.1;
  o.inner_steps = 5;
  // Theorem 4.1's tolerances for horizon T with tau = 1.
  o.delta_y = 1.0 / std::sqrt(kHorizon);
  o.delta_z = 1.0 / std::sqrt(std::pow(kHorizon, 3));
  o.max_inner_iterations = 1000000;
  if (used != nullptr) *used = o;
  auto session = *Session::Create(config);
  std::vector<double> blreg;
  StepData step;
  step.inner.c = Vector::Zero(1);
  for (int t = 1; t <= kHorizon; ++t) {
    step.inner.M = Matrix::Constant(1, 1, t % 2 == 0 ? 1.0 : -1.0);
    MetricsInput in{t, session->state().x, BilevelView(session->state()).y, Vector(), o.gamma};
    const auto report = session->Step(step);
    EXPECT_TRUE(report.ok()) << report.status();
    EXPECT_FALSE(report->cap_hit);
    in.h = BilevelPart(*report).hypergradient;
    const auto m = ComputeExactMetrics(*testing::PreparedFamily(*session, step), config.constraint,
                                       in, step, nullptr);
    EXPECT_TRUE(m.ok());
    session->AddMetrics(*m);
    blreg.push_back(session->metrics().sums[kBlreg]);
  }
  return blreg;
}

TEST(Af2obo, KeepsRegretFlatOnOscillatingDriftWhereFixedKGrowsLinearly) {
  const std::vector<double> fixed = OscillatingRegret("f2obo");
  const std::vector<double> adaptive = OscillatingRegret("af2obo");
  const double fixed_ratio = fixed[kHorizon - 1] / fixed[kHorizon / 2 - 1];
  const double adaptive_ratio = adaptive[kHorizon - 1] / adaptive[kHorizon / 2 - 1];
  EXPECT_GE(fixed_ratio, 1.8) << "F2OBO K=5 should suffer linear regret";
  EXPECT_LE(adaptive_ratio, 1.3);
  EXPECT_GE(fixed[kHorizon - 1], 10.0 * adaptive[kHorizon - 1]);
}

TEST(Af2obo, MeetsBothTolerancesAtTheEndOfEveryRound) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  SessionConfig config = testing::ConfigFor("af2obo", fam, ConstraintSet::None());
  config.options.delta_y = 1e-6;
  config.options.delta_z = 1e-8;
  auto session = *Session::Create(config);
  std::mt19937_64 rng(31);
  for (int t = 0; t < 5; ++t) {
    const StepData step = testing::QuadraticStep(testing::WellConditioned(3, 2, 0.5, 1.5, rng),
                                                 Vector::Ones(3), Vector::Zero(3));
    const auto r = session->Step(step);
    ASSERT_TRUE(r.ok());
    EXPECT_LE(BilevelPart(*r).residual_y, 1e-6);
    EXPECT_LE(BilevelPart(*r).residual_z, 1e-8);
    EXPECT_GT(BilevelPart(*r).y_iterations, 0);
  }
}

TEST(Af2obo, ReportsHittingItsIterationCap) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = fam.y_dim = 1;
  SessionConfig config = testing::ConfigFor("af2obo", fam, ConstraintSet::None());
  config.options.delta_y = config.options.delta_z = 1e-12;
  config.options.max_inner_iterations = 3;
  auto session = *Session::Create(config);
  const auto r = session->Step(
      testing::QuadraticStep(Matrix::Ones(1, 1), Vector::Constant(1, 100.0), Vector::Zero(1)));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->cap_hit);
  EXPECT_EQ(BilevelPart(*r).z_iterations, 3);
  EXPECT_EQ(BilevelPart(*r).y_iterations, 3);
  EXPECT_EQ(session->state().cap_hits, 1);
}

// By default (delta_y = delta_z = 0) the loops stop at one
// accuracy on the scale of grad_y g: ||grad_y L(y)|| <= 0.1 lambda_t and
// ||grad_y g(z)|| <= 0.1, whatever lambda_t (a constant delta_y = 0.5 asked
// ever finer accuracy 0.5 / lambda_t of grad_y g and ran into the cap on
// weakly regularized models: defaults_quality_test.cc).
TEST(Af2obo, DefaultTolerancesHoldBothLoopsToOneAccuracyOnG) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  SessionConfig config = testing::ConfigFor("af2obo", fam, ConstraintSet::None());
  ASSERT_EQ(config.options.delta_y, 0.0);  // automatic
  ASSERT_EQ(config.options.delta_z, 0.0);
  auto session = *Session::Create(config);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  int z_ran = 0, y_ran = 0;
  for (int t = 1; t <= 60; ++t) {
    // A new g every step (a drifting minimizer), so the loops have to run.
    Vector c(3);
    for (int i = 0; i < 3; ++i) c(i) = 3.0 * normal(rng);
    const double lambda = BilevelView(session->state()).lambda;
    const auto r = session->Step(
        testing::QuadraticStep(testing::WellConditioned(3, 2, 0.5, 1.5, rng), c, Vector::Zero(3)));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(BilevelPart(*r).residual_y, 0.1 * lambda) << "step " << t << ", lambda " << lambda;
    EXPECT_LE(BilevelPart(*r).residual_z, 0.1) << "step " << t << ", lambda " << lambda;
    EXPECT_FALSE(r->cap_hit);
    z_ran += BilevelPart(*r).z_iterations > 0;
    y_ran += BilevelPart(*r).y_iterations > 0;
  }
  EXPECT_GE(z_ran, 50);  // the tolerances bind: the loops run in most rounds
  EXPECT_GE(y_ran, 50);
}

// With delta_y set and delta_z = 0, the z tolerance is delta_y / lambda_t
// (Eq. (33)'s balance of the two loops' errors in the hypergradient): it
// shrinks as lambda_t grows.  Fails with the former delta_y lambda_1 /
// lambda_t (5x looser) and with a constant delta_z.
TEST(Af2obo, SetDeltaYGivesTheZToleranceDeltaYOverLambda) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  SessionConfig config = testing::ConfigFor("af2obo", fam, ConstraintSet::None());
  config.options.delta_y = 0.5;
  config.options.max_inner_iterations = 100000;
  auto session = *Session::Create(config);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  double last_tolerance = 0.0;
  for (int t = 1; t <= 60; ++t) {
    Vector c(3);
    for (int i = 0; i < 3; ++i) c(i) = normal(rng);
    const double lambda = BilevelView(session->state()).lambda;
    const auto r = session->Step(
        testing::QuadraticStep(testing::WellConditioned(3, 2, 0.5, 1.5, rng), c, Vector::Zero(3)));
    ASSERT_TRUE(r.ok()) << r.status();
    const double tolerance = config.options.delta_y / lambda;
    EXPECT_LE(BilevelPart(*r).residual_z, tolerance) << "step " << t << ", lambda " << lambda;
    EXPECT_LE(BilevelPart(*r).residual_y, config.options.delta_y);
    EXPECT_FALSE(r->cap_hit);
    last_tolerance = tolerance;
  }
  EXPECT_LT(last_tolerance, 0.1 / 10);  // well below the paper's constant 0.1 by the end
}

}  // namespace
}  // namespace f2obo
