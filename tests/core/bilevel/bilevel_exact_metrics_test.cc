// The CG-based exact metrics against closed forms.
#include "core/bilevel/bilevel_exact_metrics.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <optional>
#include <random>

#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/bilevel_state.h"
#include "core/metrics/linear_solve.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::RandomVector;

std::unique_ptr<BilevelFamily> Quadratic(int d1, int d2, double mu, bool bump) {
  FamilyConfig c;
  c.name = "quadratic";
  c.x_dim = d1;
  c.y_dim = d2;
  c.mu = mu;
  c.bump_upper = bump;
  c.bump_scale = 0.8;
  return *CreateBilevelFamily(c);
}

TEST(ExactMetrics, QuadraticInnerSolutionAndHypergradientMatchClosedForms) {
  std::mt19937_64 rng(71);
  for (bool bump : {false, true}) {
    auto fam = Quadratic(4, 6, 1.7, bump);
    const Matrix M = testing::RandomMatrix(6, 4, rng);
    const StepData step = testing::QuadraticStep(M, RandomVector(6, rng), RandomVector(6, rng));
    const Vector x = RandomVector(4, rng, 0.3);
    const auto th = ComputeTrueHypergradient(*fam, x, step, Vector::Zero(6), {});
    const Vector ystar = M * x + step.inner.c;  // y*(x) = M x + c
    // grad F = M^T grad_y f(y*): LS: y* - d; bump: -1.6 y* exp(-||y*||^2).
    const Vector gyf = bump ? Vector(-2.0 * 0.8 * std::exp(-ystar.squaredNorm()) * ystar)
                            : Vector(ystar - step.upper.d);
    EXPECT_LE((th.inner.y - ystar).norm(), 1e-8 * std::max(1.0, ystar.norm()));
    EXPECT_LE((th.grad - M.transpose() * gyf).norm(), 1e-8) << "bump " << bump;
  }
}

TEST(ExactMetrics, RidgeInnerSolutionAndHypergradientMatchClosedForms) {
  std::mt19937_64 rng(72);
  const int d = 6;
  for (bool sparse : {false, true}) {
    const Vector w = RandomVector(d, rng);
    StepData step;
    step.inner = testing::RegressionBatch(25, w, 0.5, sparse, rng);
    step.upper = testing::RegressionBatch(15, w, 0.1, sparse, rng);
    FamilyConfig c;
    c.name = "ridge_hpo";
    c.features = d;
    c.mu0 = 0.01;
    auto fam = *CreateBilevelFamily(c);
    const Vector x = RandomVector(d, rng).cwiseAbs();
    const auto th = ComputeTrueHypergradient(*fam, x, step, Vector::Zero(d), {});

    const Matrix a_in = sparse ? Matrix(step.inner.csr) : Matrix(step.inner.dense);
    const Matrix a_up = sparse ? Matrix(step.upper.csr) : Matrix(step.upper.dense);
    Matrix h = a_in.transpose() * a_in / 25.0;
    h.diagonal() += (x.array() + 0.01).matrix();
    const Eigen::LDLT<Matrix> ldlt(h);
    const Vector ystar = ldlt.solve(a_in.transpose() * step.inner.targets / 25.0);
    const Vector gyf = a_up.transpose() * (a_up * ystar - step.upper.targets) / 15.0;
    const Vector grad = -(ystar.array() * ldlt.solve(gyf).array()).matrix();
    EXPECT_LE((th.inner.y - ystar).norm(), 1e-8 * std::max(1.0, ystar.norm()));
    EXPECT_LE((th.grad - grad).norm(), 1e-8 * std::max(1.0, grad.norm())) << "sparse " << sparse;
  }
}

TEST(ExactMetrics, RegretTermErrorVariationAndDriftMatchClosedForms) {
  std::mt19937_64 rng(73);
  auto fam = Quadratic(3, 3, 1.0, false);
  const StepData prev = testing::QuadraticStep(testing::RandomMatrix(3, 3, rng),
                                               RandomVector(3, rng), RandomVector(3, rng));
  const StepData cur = testing::QuadraticStep(testing::RandomMatrix(3, 3, rng),
                                              RandomVector(3, rng), RandomVector(3, rng));
  const ConstraintSet box = ConstraintSet::Box(-0.5, 0.5);
  MetricsInput in{7, Vector::Constant(3, 0.5), Vector::Zero(3), RandomVector(3, rng), 0.1};
  const auto m = ComputeExactMetrics(*fam, box, in, cur, &prev);
  ASSERT_TRUE(m.ok());

  auto ystar = [&](const StepData& s) { return (s.inner.M * in.x + s.inner.c).eval(); };
  auto value = [&](const StepData& s) { return 0.5 * (ystar(s) - s.upper.d).squaredNorm(); };
  const Vector grad = cur.inner.M.transpose() * (ystar(cur) - cur.upper.d);
  const Vector mapping = (in.x - (in.x - 0.1 * grad).cwiseMax(-0.5).cwiseMin(0.5)) / 0.1;
  EXPECT_EQ(m->t, 7);
  EXPECT_NEAR(m->regret_term, mapping.squaredNorm(), 1e-9);
  EXPECT_NEAR(m->hypergradient_error, (in.h - grad).norm(), 1e-9);
  EXPECT_NEAR(m->value, value(cur), 1e-9);
  ASSERT_TRUE(m->variation.has_value() && m->drift.has_value());
  EXPECT_NEAR(*m->variation, std::abs(value(cur) - value(prev)), 1e-9);
  EXPECT_NEAR(*m->drift, (ystar(cur) - ystar(prev)).squaredNorm(), 1e-9);

  RunningMetrics running;
  Accumulate(*m, &running);
  Accumulate(*m, &running);
  EXPECT_EQ(running.evaluated_steps, 2);
  EXPECT_DOUBLE_EQ(running.sums[kBlreg], 2 * m->regret_term);
  EXPECT_DOUBLE_EQ(running.sums[kDrift], 2 * *m->drift);
}

TEST(ExactMetrics, WithoutPreviousBatchesVariationAndDriftAreAbsent) {
  std::mt19937_64 rng(74);
  auto fam = Quadratic(2, 2, 1.0, false);
  const StepData cur =
      testing::QuadraticStep(Matrix::Identity(2, 2), RandomVector(2, rng), RandomVector(2, rng));
  const auto m = ComputeExactMetrics(
      *fam, ConstraintSet::None(),
      MetricsInput{1, Vector::Zero(2), Vector::Zero(2), Vector::Zero(2), 0.1}, cur, nullptr);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->variation.has_value());
  EXPECT_FALSE(m->drift.has_value());
  RunningMetrics running;
  Accumulate(*m, &running);
  EXPECT_EQ(running.sums[kDriftSteps], 0.0);
}

TEST(ExactMetrics, NewtonSolvesTheLogisticInnerProblemToTolerance) {
  std::mt19937_64 rng(75);
  FamilyConfig c;
  c.name = "logistic_hpo";
  c.features = 5;
  c.classes = 3;
  c.mu0 = 1e-2;
  auto fam = *CreateBilevelFamily(c);
  StepData step{testing::ClassificationBatch(30, 5, 3, false, rng),
                testing::ClassificationBatch(40, 5, 3, false, rng)};
  fam->Prepare(step);
  const Vector x = Vector::Constant(5, 0.05);
  const InnerSolution sol =
      SolveInner(*fam, x, BatchView::All(step.inner), Vector::Zero(fam->y_dim()), {});
  EXPECT_LE(sol.grad_norm, 1e-10);
  EXPECT_LE(sol.newton_iterations, 20);  // quadratic convergence, not GD
  // The true hypergradient matches a finite difference of F(x) = f(x, y*(x)).
  const auto th = ComputeTrueHypergradient(*fam, x, step, sol.y, {});
  const Vector u = RandomVector(5, rng).normalized();
  const double e = 1e-5;
  auto F = [&](const Vector& xx) {
    const auto s = SolveInner(*fam, xx, BatchView::All(step.inner), sol.y, {});
    return fam->F(xx, s.y, BatchView::All(step.upper), nullptr, nullptr);
  };
  const double fd = (F(x + e * u) - F(x - e * u)) / (2 * e);
  EXPECT_NEAR(fd, th.grad.dot(u), 1e-6 * std::max(1.0, th.grad.norm()));
}

// Found by fuzz/step_harness (input in fuzz/corpus/): features of 1e200 are
// finite, but the gradient's norm overflows, the Newton solve stops at once
// and the metrics came back OK with inner_residual = inf (and a meaningless
// true hypergradient).  The contract: OK means every metric is finite.
TEST(ExactMetrics, OverflowingGradientNormIsAnErrorNotAnInfiniteMetric) {
  std::mt19937_64 rng(76);
  FamilyConfig c;
  c.name = "logistic_hpo";
  c.features = 3;
  c.classes = 2;
  auto fam = *CreateBilevelFamily(c);
  StepData step{testing::ClassificationBatch(8, 3, 2, false, rng),
                testing::ClassificationBatch(8, 3, 2, false, rng)};
  step.inner.dense(0, 0) = 1e200;
  const int y_dim = fam->y_dim();
  const auto m = ComputeExactMetrics(
      *fam, ConstraintSet::Box(0.0, 0.1),
      MetricsInput{1, Vector::Constant(3, 0.05), Vector::Zero(y_dim), Vector::Zero(3), 0.1}, step,
      &step);
  if (m.ok()) {
    EXPECT_TRUE(std::isfinite(m->inner_residual)) << m->inner_residual;
    EXPECT_TRUE(std::isfinite(m->true_gradient_norm)) << m->true_gradient_norm;
    EXPECT_TRUE(std::isfinite(m->regret_term) && std::isfinite(m->hypergradient_error) &&
                std::isfinite(m->value) && std::isfinite(*m->variation) &&
                std::isfinite(*m->drift));
  } else {
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  }
}

// Each metric is checked for finiteness on its own: value = 0.6e308 and
// regret_term = 1.2e308 are both finite, but their sum overflows, and the
// metrics were refused as "non-finite".
TEST(ExactMetrics, FiniteMetricsWhoseSumOverflowsAreAccepted) {
  auto fam = Quadratic(1, 1, 1.0, false);
  const double r = std::sqrt(1.2e308);  // y* - d with y* = 0
  const StepData step =
      testing::QuadraticStep(Matrix::Identity(1, 1), Vector::Zero(1), Vector::Constant(1, -r));
  const auto m = ComputeExactMetrics(
      *fam, ConstraintSet::None(),
      MetricsInput{1, Vector::Zero(1), Vector::Zero(1), Vector::Constant(1, r), 0.1}, step,
      nullptr);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->value, 0.6e308);
  EXPECT_DOUBLE_EQ(m->regret_term, 1.2e308);
  EXPECT_FALSE(std::isfinite(m->value + m->regret_term));  // the sum the check used
  EXPECT_TRUE(m->inner_converged);
  EXPECT_TRUE(m->cg_converged);
}

// The convergence flags: a capped solve still returns finite, plausible
// numbers, so the metrics say whether each solve met its tolerance.
struct LogisticProblem {
  std::unique_ptr<BilevelFamily> fam;
  StepData step;
  MetricsInput in;
};

LogisticProblem MakeLogisticProblem(uint64_t seed) {
  std::mt19937_64 rng(seed);
  FamilyConfig c;
  c.name = "logistic_hpo";
  c.features = 5;
  c.classes = 3;
  c.mu0 = 1e-2;
  LogisticProblem p{*CreateBilevelFamily(c),
                    StepData{testing::ClassificationBatch(30, 5, 3, false, rng),
                             testing::ClassificationBatch(40, 5, 3, false, rng)},
                    {}};
  p.in = MetricsInput{3, Vector::Constant(5, 0.05), Vector::Zero(p.fam->y_dim()), Vector::Zero(5),
                      0.1};
  return p;
}

TEST(ExactMetricsConvergence, DefaultSolvesReportConvergedWithResidualsWithinTolerance) {
  LogisticProblem p = MakeLogisticProblem(77);
  const ExactMetricsOptions o;
  const auto m =
      ComputeExactMetrics(*p.fam, ConstraintSet::Box(0.0, 1.0), p.in, p.step, &p.step, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->inner_converged);
  EXPECT_LE(m->inner_residual, o.inner_tolerance);
  EXPECT_GT(m->inner_relative_residual, 0.0);
  EXPECT_LT(m->inner_relative_residual, 1e-6);
  EXPECT_TRUE(m->cg_converged);
  EXPECT_LE(m->cg_relative_residual, o.cg_tolerance);
  ASSERT_TRUE(m->previous_inner_converged.has_value());
  EXPECT_TRUE(*m->previous_inner_converged);

  const auto first =
      ComputeExactMetrics(*p.fam, ConstraintSet::Box(0.0, 1.0), p.in, p.step, nullptr, o);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->previous_inner_converged.has_value());
}

TEST(ExactMetricsConvergence, ANewtonIterationCapIsReportedAsUnconverged) {
  LogisticProblem p = MakeLogisticProblem(78);
  ExactMetricsOptions o;
  o.max_newton_iterations = 1;  // from y = 0, one Newton step is far from 1e-10
  const auto m =
      ComputeExactMetrics(*p.fam, ConstraintSet::Box(0.0, 1.0), p.in, p.step, &p.step, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->newton_iterations, 2);  // one for step t, one for step t - 1
  EXPECT_FALSE(m->inner_converged);
  EXPECT_GT(m->inner_residual, o.inner_tolerance);
  ASSERT_TRUE(m->previous_inner_converged.has_value());
  EXPECT_FALSE(*m->previous_inner_converged);
  // The relative residual is the reached norm over the warm start's.
  p.fam->Prepare(p.step);
  Vector g0(p.fam->y_dim());
  p.fam->G(p.in.x, p.in.y, BatchView::All(p.step.inner), nullptr, &g0);
  EXPECT_NEAR(m->inner_relative_residual, m->inner_residual / g0.norm(), 1e-15);
  EXPECT_LT(m->inner_relative_residual, 1.0);  // the one step did help

  o.max_newton_iterations = 0;  // no step at all: residual ratio exactly 1
  const InnerSolution none = SolveInner(*p.fam, p.in.x, BatchView::All(p.step.inner), p.in.y, o);
  EXPECT_FALSE(none.converged);
  EXPECT_EQ(none.relative_residual, 1.0);
}

TEST(ExactMetricsConvergence, ACgIterationCapIsReportedAsUnconverged) {
  LogisticProblem p = MakeLogisticProblem(79);
  ExactMetricsOptions o;
  p.fam->Prepare(p.step);
  // Solve the inner problem fully first, then cap only the hypergradient CG.
  const InnerSolution sol = SolveInner(*p.fam, p.in.x, BatchView::All(p.step.inner), p.in.y, o);
  ASSERT_TRUE(sol.converged);
  o.max_cg_iterations = 1;  // y_dim = 18 with a non-isotropic Hessian
  const TrueHypergradient capped = ComputeTrueHypergradient(*p.fam, p.in.x, p.step, sol.y, o);
  EXPECT_EQ(capped.cg_iterations, 1);
  EXPECT_FALSE(capped.cg_converged);
  EXPECT_GT(capped.cg_relative_residual, o.cg_tolerance);
  EXPECT_TRUE(std::isfinite(capped.grad.norm()));  // plausible, yet unconverged

  MetricsInput warm = p.in;
  warm.y = sol.y;
  const auto m =
      ComputeExactMetrics(*p.fam, ConstraintSet::Box(0.0, 1.0), warm, p.step, nullptr, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE(m->cg_converged);
  EXPECT_EQ(m->cg_relative_residual, capped.cg_relative_residual);
}

// With CG capped at zero iterations the Newton direction is zero, not a
// descent direction: every iteration takes the safeguard's Cauchy step
// (steepest descent with the model's step length), which still converges.
TEST(ExactMetricsConvergence, WithoutNewtonDirectionsTheCauchySafeguardStillConverges) {
  LogisticProblem p = MakeLogisticProblem(81);
  p.fam->Prepare(p.step);
  ExactMetricsOptions o;
  o.max_cg_iterations = 0;
  o.max_newton_iterations = 20000;
  const InnerSolution sol = SolveInner(*p.fam, p.in.x, BatchView::All(p.step.inner), p.in.y, o);
  EXPECT_TRUE(sol.converged) << sol.grad_norm << " after " << sol.newton_iterations;
  EXPECT_LE(sol.grad_norm, o.inner_tolerance);
  EXPECT_GT(sol.newton_iterations, 0);
  EXPECT_EQ(sol.cauchy_steps, sol.newton_iterations);
  EXPECT_EQ(sol.cg_iterations, 0);
  // The same minimizer as Newton's (g is strongly convex: one minimizer).
  const InnerSolution newton = SolveInner(*p.fam, p.in.x, BatchView::All(p.step.inner), p.in.y, {});
  EXPECT_EQ(newton.cauchy_steps, 0);
  EXPECT_LE((sol.y - newton.y).norm(), 2 * o.inner_tolerance / 1e-2);  // mu_0 = 1e-2
}

// Accumulate never sums an unconverged term: it counts it instead.
ExactMetrics Converged(double regret, std::optional<double> variation,
                       std::optional<double> drift) {
  ExactMetrics m;
  m.regret_term = regret;
  m.variation = variation;
  m.drift = drift;
  m.inner_converged = m.cg_converged = true;
  if (variation.has_value()) m.previous_inner_converged = true;
  return m;
}

// The running sums and counts, all at once.
struct Sums {
  int64_t evaluated, unconverged;
  double blreg;
  int64_t drift_steps, unconverged_drift;
  double variation, drift;
};
void ExpectSums(const RunningMetrics& r, const Sums& e) {
  EXPECT_EQ(r.evaluated_steps, e.evaluated);
  ASSERT_EQ(r.sums.size(), kBilevelSumCount);
  EXPECT_EQ(r.sums[kUnconvergedSteps], e.unconverged);
  EXPECT_EQ(r.sums[kBlreg], e.blreg);
  EXPECT_EQ(r.sums[kDriftSteps], e.drift_steps);
  EXPECT_EQ(r.sums[kUnconvergedDriftSteps], e.unconverged_drift);
  EXPECT_EQ(r.sums[kVariation], e.variation);
  EXPECT_EQ(r.sums[kDrift], e.drift);
}

TEST(ExactMetricsAccumulate, UnconvergedTermsAreCountedAndLeftOutOfTheSums) {
  RunningMetrics r;
  Accumulate(Converged(1.0, std::nullopt, std::nullopt), &r);  // first step
  Accumulate(Converged(2.0, 0.5, 0.25), &r);
  ExpectSums(r, {2, 0, 3.0, 1, 0, 0.5, 0.25});

  ExactMetrics cg = Converged(100.0, 10.0, 10.0);  // hypergradient CG capped
  cg.cg_converged = false;
  EXPECT_FALSE(cg.RegretConverged());
  EXPECT_TRUE(cg.DriftConverged());  // variation and drift need no CG
  Accumulate(cg, &r);
  ExpectSums(r, {3, 1, 3.0, 2, 0, 10.5, 10.25});

  ExactMetrics previous = Converged(4.0, 1000.0, 1000.0);  // step t-1 solve short
  previous.previous_inner_converged = false;
  EXPECT_TRUE(previous.RegretConverged());
  EXPECT_FALSE(previous.DriftConverged());
  Accumulate(previous, &r);
  ExpectSums(r, {4, 1, 7.0, 3, 1, 10.5, 10.25});

  ExactMetrics inner = Converged(1e6, 1e6, 1e6);  // step t solve short: all out
  inner.inner_converged = false;
  Accumulate(inner, &r);
  ExpectSums(r, {5, 2, 7.0, 4, 2, 10.5, 10.25});

  // Default-constructed metrics read as unconverged.
  Accumulate(ExactMetrics{}, &r);
  ExpectSums(r, {6, 3, 7.0, 4, 2, 10.5, 10.25});
}

// ComputeExactMetrics' flags feed Accumulate: a Newton cap on both solves
// leaves the step out of every sum.
TEST(ExactMetricsAccumulate, ACappedSolveIsLeftOutOfBLRegAndTheDriftSums) {
  LogisticProblem p = MakeLogisticProblem(82);
  ExactMetricsOptions o;
  o.max_newton_iterations = 1;
  const auto m =
      ComputeExactMetrics(*p.fam, ConstraintSet::Box(0.0, 1.0), p.in, p.step, &p.step, o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_FALSE(m->inner_converged);
  RunningMetrics r;
  Accumulate(*m, &r);
  ExpectSums(r, {1, 1, 0.0, 1, 1, 0.0, 0.0});
}

TEST(ConjugateGradient, OutcomeReportsTheTrueRelativeResidualAndConvergence) {
  std::mt19937_64 rng(80);
  const Matrix q = testing::WellConditioned(6, 6, 1.0, 1.0, rng);  // orthogonal
  Vector eig(6);
  eig << 0.1, 0.5, 1.0, 2.0, 5.0, 10.0;
  const Matrix a = q * eig.asDiagonal() * q.transpose();
  const Vector b = RandomVector(6, rng);
  auto apply = [&](const Vector& v, Vector* out) { *out = a * v; };
  Vector w;
  CgOutcome capped;
  EXPECT_EQ(ConjugateGradient(apply, b, 1e-12, 2, &w, &capped), 2);
  EXPECT_EQ(capped.iterations, 2);
  EXPECT_FALSE(capped.converged);
  EXPECT_NEAR(capped.relative_residual, (a * w - b).norm() / b.norm(), 1e-12);
  EXPECT_GT(capped.relative_residual, 1e-12);

  CgOutcome full;
  ConjugateGradient(apply, b, 1e-12, 100, &w, &full);
  EXPECT_TRUE(full.converged);
  EXPECT_LE(full.relative_residual, 1e-12);
  EXPECT_LE((a * w - b).norm() / b.norm(), 1e-10);

  CgOutcome zero;
  EXPECT_EQ(ConjugateGradient(apply, Vector::Zero(6), 1e-12, 100, &w, &zero), 0);
  EXPECT_TRUE(zero.converged);
  EXPECT_EQ(zero.relative_residual, 0.0);
}

}  // namespace
}  // namespace f2obo
