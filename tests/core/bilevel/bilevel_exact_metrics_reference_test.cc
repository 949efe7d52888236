// The exact metrics against an independent dense solve (dense_reference.h:
// Newton on the explicit Hessian with an exact line search), on steps built
// so that the former inner solver -- Newton-CG that stopped as soon as an
// accepted damped step failed to lower ||grad_y g|| -- stopped early:
// separable data, features of 10, tiny mu_0, far warm starts.  On the
// cross-entropy families it ended at residuals of 3e-5 to 7.5 with F_t off
// by 2 to 2.5e4 (figures printed by the test, and in the commit that
// replaced it).  ridge_hpo's g is quadratic, where a Newton-CG step that
// met its forcing term lowers g and ||grad_y g|| alike: the old solver only
// stopped there at the round-off floor of large gradients, with correct
// values but flagged unconverged; the relative test now accepts that floor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <utility>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "tests/core/bilevel/dense_reference.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::RandomMatrix;
using testing::RandomVector;

// Linearly separable classification rows: label = argmax of a random
// teacher's scores; features N(0, scale^2).
Batch Separable(int rows, int d, int c, double scale, std::mt19937_64& rng) {
  Batch b;
  b.dense = RandomMatrix(rows, d, rng) * scale;
  const Matrix teacher = RandomMatrix(d, c, rng);
  for (int i = 0; i < rows; ++i) {
    Eigen::Index l;
    (b.dense.row(i) * teacher).maxCoeff(&l);
    b.labels.push_back(static_cast<int>(l));
  }
  return b;
}

// One constructed step: the family, x_t, the warm start y_t, the step's
// batches and a previous step's (for variation and drift), and mu, the
// strong-convexity constant of g in y at x_t.
struct HardStep {
  std::string name;
  std::unique_ptr<BilevelFamily> family;
  ConstraintSet set;
  Vector x, warm;
  StepData current, previous;
  double mu = 0.0;
};

// A cross-entropy family on 4 features and 3 classes, with separable rows
// of the given feature scale (30 upper, 30 inner per step).
HardStep Classification(const std::string& name, const std::string& family, uint64_t seed,
                        double mu0, double feature_scale, Vector x, ConstraintSet set,
                        double warm_scale) {
  std::mt19937_64 rng(seed);
  FamilyConfig c;
  c.name = family;
  c.features = 4;
  c.classes = 3;
  c.mu0 = mu0;
  HardStep s{name, *CreateBilevelFamily(c), set, std::move(x), {}, {}, {}, mu0};
  const auto make = [&] {
    return StepData{Separable(30, 4, 3, feature_scale, rng),
                    Separable(30, 4, 3, feature_scale, rng)};
  };
  s.current = make();
  s.warm = RandomVector(s.family->y_dim(), rng, warm_scale);
  s.previous = make();
  return s;
}

// logistic_hpo at x = 0, the box's corner, where mu_0 alone makes g
// strongly convex; features of 10.
HardStep Logistic(const std::string& name, uint64_t seed, double mu0, double warm_scale) {
  return Classification(name, "logistic_hpo", seed, mu0, 10.0, Vector::Zero(4),
                        ConstraintSet::Box(0.0, 0.1), warm_scale);
}

// loss_tuning with gamma = 5 (logits five times as steep); features of 3.
HardStep LossTuning(const std::string& name, uint64_t seed, double mu0, double warm_scale) {
  Vector x(6);
  x << 5.0, 5.0, 5.0, 0.5, -0.5, 0.0;
  return Classification(name, "loss_tuning", seed, mu0, 3.0, x, ConstraintSet::None(), warm_scale);
}

// 8 features scaled from 1/s to s across the columns, 6 inner rows (so
// A^T A is singular and mu_0 alone bounds the Hessian below), targets
// scaled by `target_scale`.
HardStep Ridge(const std::string& name, uint64_t seed, double column_scale, double mu0,
               double target_scale, double warm_scale) {
  std::mt19937_64 rng(seed);
  const int d = 8;
  FamilyConfig c;
  c.name = "ridge_hpo";
  c.features = d;
  c.mu0 = mu0;
  HardStep s{
      name, *CreateBilevelFamily(c), ConstraintSet::Box(0.0, 1.0), Vector::Zero(d), {}, {}, {},
      mu0};
  const auto make = [&]() {
    const Vector w = RandomVector(d, rng);
    StepData step{testing::RegressionBatch(10, w, 0.1, false, rng),
                  testing::RegressionBatch(6, w, 0.1, false, rng)};
    for (int j = 0; j < d; ++j) {
      const double scale = std::pow(column_scale, (j - 3.5) / 3.5);
      step.inner.dense.col(j) *= scale;
      step.upper.dense.col(j) *= scale;
    }
    step.inner.targets *= target_scale;
    step.upper.targets *= target_scale;
    return step;
  };
  s.current = make();
  s.warm = RandomVector(d, rng, warm_scale);
  s.previous = make();
  return s;
}

class ExactMetricsAgainstDenseSolve : public ::testing::TestWithParam<int> {
 protected:
  static HardStep Make(int i) {
    switch (i) {
      case 0:
        return Logistic("logistic_hpo far warm start", 0, 1e-3, 10.0);
      case 1:
        return Logistic("logistic_hpo separable, mu_0 1e-6", 0, 1e-6, 0.0);
      case 2:
        return LossTuning("loss_tuning far warm start", 0, 1e-3, 10.0);
      case 3:
        return LossTuning("loss_tuning separable, mu_0 1e-6", 1, 1e-6, 0.0);
      case 4:
        return Ridge("ridge_hpo ill-conditioned, far warm start", 0, 100.0, 1e-8, 1.0, 1e6);
      default:
        return Ridge("ridge_hpo round-off floor", 38, 100.0, 1e-4, 1e4, 0.0);
    }
  }
};

TEST_P(ExactMetricsAgainstDenseSolve, InnerSolutionValueAndMetricsAgreeAndSayConverged) {
  HardStep s = Make(GetParam());
  SCOPED_TRACE(s.name);
  BilevelFamily& fam = *s.family;
  const ExactMetricsOptions o;

  // The independent solves, of step t and of step t - 1 at the same x.
  fam.Prepare(s.previous);
  const testing::DenseSolution before = testing::DenseSolve(fam, s.x, s.previous, s.warm);
  fam.Prepare(s.current);
  const testing::DenseSolution ref = testing::DenseSolve(fam, s.x, s.current, s.warm);

  const InnerSolution sol = SolveInner(fam, s.x, BatchView::All(s.current.inner), s.warm, o);
  const double value = fam.F(s.x, sol.y, BatchView::All(s.current.upper), nullptr, nullptr);
  std::printf(
      "[ figures  ] %-42s residual %.2e (reference %.2e), |F_t error| %.2e, "
      "%d Newton, %d Cauchy steps\n",
      s.name.c_str(), sol.grad_norm, ref.residual, std::abs(value - ref.value),
      sol.newton_iterations, sol.cauchy_steps);
  EXPECT_TRUE(sol.converged) << "residual " << sol.grad_norm;

  // g is mu-strongly convex: ||y - y*|| <= ||grad_y g(y)|| / mu for both
  // solutions, hence this bound on their distance, and to first order
  // |F - F_ref| <= ||grad_y f|| times it (a factor 2 for the second order).
  const double y_bound = (sol.grad_norm + ref.residual) / s.mu;
  Vector gy_f(fam.y_dim());
  fam.F(s.x, ref.y, BatchView::All(s.current.upper), nullptr, &gy_f);
  const double f_bound = 2.0 * gy_f.norm() * y_bound + 1e-13 * std::max(1.0, std::abs(ref.value));
  EXPECT_LE((sol.y - ref.y).norm(), y_bound);
  EXPECT_NEAR(value, ref.value, f_bound);

  // The published metrics, with the previous step's batches.
  const MetricsInput in{5, s.x, s.warm, Vector::Zero(fam.x_dim()), 0.1};
  const auto m = ComputeExactMetrics(fam, s.set, in, s.current, &s.previous, o);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->inner_converged);
  EXPECT_TRUE(m->cg_converged);
  ASSERT_TRUE(m->previous_inner_converged.has_value());
  EXPECT_TRUE(*m->previous_inner_converged);
  EXPECT_TRUE(m->RegretConverged() && m->DriftConverged());
  EXPECT_NEAR(m->value, ref.value, f_bound);
  ASSERT_TRUE(m->variation.has_value() && m->drift.has_value());
  EXPECT_NEAR(*m->variation, std::abs(ref.value - before.value), 2.0 * f_bound);

  // Hypergradient, regret term and drift depend on y* through H^-1 as
  // well: on the well-conditioned steps (mu_0 = 1e-3) they must agree
  // tightly; on the others the bound above is what the tolerance promises.
  if (s.mu >= 1e-3) {
    Vector mapping(fam.x_dim());
    GradientMapping(s.set, s.x, ref.grad, 0.1, &mapping);
    const double scale = std::max(1.0, ref.grad.norm());
    EXPECT_NEAR(m->true_gradient_norm, ref.grad.norm(), 1e-6 * scale);
    EXPECT_NEAR(m->hypergradient_error, ref.grad.norm(), 1e-6 * scale);  // h = 0
    EXPECT_NEAR(m->regret_term, mapping.squaredNorm(), 1e-6 * scale * scale);
    EXPECT_NEAR(*m->drift, (ref.y - before.y).squaredNorm(),
                1e-6 * std::max(1.0, (ref.y - before.y).squaredNorm()));
  }
}

INSTANTIATE_TEST_SUITE_P(HardSteps, ExactMetricsAgainstDenseSolve, ::testing::Range(0, 6));

// The reference itself: on the cross-entropy steps it reaches 1e-12.
TEST(DenseReference, ReachesTheTwelveDigitResidualOnTheCrossEntropySteps) {
  for (int i = 0; i < 4; ++i) {
    HardStep s = i < 2 ? Logistic("l", 0, i == 0 ? 1e-3 : 1e-6, i == 0 ? 10.0 : 0.0)
                       : LossTuning("t", i == 2 ? 0 : 1, i == 2 ? 1e-3 : 1e-6, i == 2 ? 10.0 : 0.0);
    s.family->Prepare(s.current);
    EXPECT_LE(testing::DenseSolve(*s.family, s.x, s.current, s.warm).residual, 1e-12) << i;
  }
}

}  // namespace
}  // namespace f2obo
