// The secant rule of core/bilevel/hypergradients/secant_steps.h on closed forms:
// gradient descent on a quadratic with eigenvalues in [1, 100], no L given.
#include "core/bilevel/hypergradients/secant_steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace f2obo {
namespace {

constexpr double kLambda = 4.0;

// g(u) = 0.5 u' A u, A = diag(1, ..., 100): L = 100, mu = 1.
Vector Curvatures() { return Vector::LinSpaced(20, 1.0, 100.0); }

// Runs the z-loop alone (the y-loop's direction zero) for n iterations.
struct Trace {
  std::vector<double> steps;  // a_k, k = 0 (the probe) .. n-1
  std::vector<double> secants;
  double grad_ratio = 0.0;  // ||grad(u_n)|| / ||grad(u_0)||
};

Trace GradientDescent(SecantSteps* rule, int n, Vector u) {
  const Vector a = Curvatures();
  Trace run;
  Vector g = a.cwiseProduct(u), g_prev;
  const double g0 = g.norm();
  for (int k = 0; k < n; ++k) {
    if (k > 0) {
      rule->Observe(kLambda, g_prev.norm(), (g - g_prev).norm(), 0.0, 0.0);
      run.secants.push_back(rule->Estimate(kLambda).l_g1);
    }
    const StepSizes s = rule->Next(kLambda, u.norm(), g.norm(), 0.0, 0.0);
    EXPECT_DOUBLE_EQ(s.beta * kLambda, s.alpha);
    run.steps.push_back(s.alpha);
    u -= s.alpha * g;
    g_prev = g;
    g = a.cwiseProduct(u);
  }
  run.grad_ratio = g.norm() / g0;
  return run;
}

TEST(SecantSteps, GradientDescentWithoutLConvergesWithStepsBetweenAdgdsBounds) {
  SecantSteps rule{Vector()};
  const Vector u0 = Vector::Constant(20, 3.0);
  const Trace run = GradientDescent(&rule, 500, u0);
  // The probe moves u by kProbe max(1, ||u||).
  EXPECT_NEAR(run.steps[0] * (Curvatures().cwiseProduct(u0)).norm(),
              SecantSteps::kProbe * u0.norm(), 1e-12);
  for (size_t k = 1; k < run.steps.size(); ++k) {
    const double secant = run.secants[k - 1];
    EXPECT_GE(secant, 1.0 - 1e-9);  // a secant lies in [mu, L]
    EXPECT_LE(secant, 100.0 + 1e-9);
    EXPECT_LE(run.steps[k] * secant, 0.5 + 1e-12);         // a_k <= 1/(2 L_k)
    EXPECT_GE(run.steps[k], 1.0 / (2.0 * 100.0) - 1e-15);  // >= 1/(2L) after the probe
  }
  // Gradient descent at 1/(2L) would need ~ 2 kappa ln(1e8) = 3,700
  // iterations for 1e-8; the longer adaptive steps take fewer.
  EXPECT_LT(run.grad_ratio, 1e-8);
}

// The most the step may grow from `before` ([a, theta]) in one iteration.
double GrowthCap(const Vector& before) {
  return std::min(std::sqrt(1.0 + before[1]), SecantSteps::kMaxGrowth) * before[0] * (1.0 + 1e-12);
}

TEST(SecantSteps, AStepCutBySpuriousCurvatureGrowsBackByAtMostTheGrowthCap) {
  SecantSteps rule{Vector()};
  GradientDescent(&rule, 50, Vector::Constant(20, 3.0));
  const double settled = rule.Part()[0];
  // A kink: the gradient jumps by 1e4 times the move.
  rule.Next(kLambda, 1.0, 1.0, 0.0, 0.0);
  rule.Observe(kLambda, 1.0, 1e4 * settled, 0.0, 0.0);
  EXPECT_GT(settled, 1.0 / (2.0 * 100.0));
  EXPECT_DOUBLE_EQ(rule.Part()[0], 1.0 / (2.0 * 1e4));  // 1/(2 L_k), L_k = 1e4
  // Then a tame secant: the step grows back, each time by at most
  // min(sqrt(1 + theta), kMaxGrowth), theta the last ratio: the factor
  // 1e4 back in log(1e4) / log(1.05) = 189 iterations.
  for (int k = 0; k < 200; ++k) {
    const Vector before = rule.Part();
    rule.Next(kLambda, 1.0, 1.0, 0.0, 0.0);
    rule.Observe(kLambda, 1.0, 1.0 * before[0], 0.0, 0.0);  // secant 1
    EXPECT_LE(rule.Part()[0], GrowthCap(before));
  }
  EXPECT_NEAR(rule.Part()[0], 0.5, 1e-12);  // back to 1/(2 L_k), L_k = 1
}

// The torch Tuner's failure before the cap: a run of flat secants let
// AdGD's sqrt(1 + theta) compound the step 8x within a few rounds.  Here
// twenty secants 100x flatter than the settled curvature grow the step by
// at most kMaxGrowth^20 = 2.65x, not to 1/(2 L_k) = 100x.
TEST(SecantSteps, ARunOfFlatSecantsGrowsTheStepByAtMostTheGrowthCapPerIteration) {
  SecantSteps rule{Vector()};
  rule.Next(kLambda, 1.0, 1.0, 0.0, 0.0);
  rule.Observe(kLambda, 1.0, 1.0 * 1e-3, 0.0, 0.0);  // the probe's secant: L = 1
  ASSERT_DOUBLE_EQ(rule.Part()[0], 0.5);
  for (int k = 0; k < 20; ++k) {
    const Vector before = rule.Part();
    rule.Next(kLambda, 1.0, 1.0, 0.0, 0.0);
    rule.Observe(kLambda, 1.0, 0.01 * before[0], 0.0, 0.0);  // secant 0.01
    EXPECT_LE(rule.Part()[0], GrowthCap(before));
  }
  EXPECT_NEAR(rule.Part()[0], 0.5 * std::pow(SecantSteps::kMaxGrowth, 20), 1e-9);
}

// AF2OBO's form: from a known step a0 (no probe), AdGD's theta_0 = +inf,
// and its own growth cap; a secant still cuts the step at once.
TEST(SecantSteps, FromAKnownStepGrowsByTheGivenCapAndASecantCutsIt) {
  SecantSteps rule(0.5, 1.2);
  EXPECT_DOUBLE_EQ(rule.Current(kLambda).alpha, 0.5);  // a0, not a probe
  EXPECT_DOUBLE_EQ(rule.Current(kLambda).beta, 0.5 / kLambda);
  for (int k = 1; k <= 5; ++k) {
    const double a = rule.Current(kLambda).alpha;
    rule.Observe(kLambda, 1.0, 1e-3 * a, 0.0, 0.0);  // flat: secant 1e-3
    EXPECT_NEAR(rule.Part()[0], 0.5 * std::pow(1.2, k), 1e-12);
  }
  const double a = rule.Current(kLambda).alpha;
  rule.Observe(kLambda, 1.0, 10.0 * a, 0.0, 0.0);  // secant 10: bound 1/20
  EXPECT_DOUBLE_EQ(rule.Part()[0], 0.05);
}

TEST(SecantSteps, TheYLoopsSecantBoundsTheMatchedStep) {
  SecantSteps rule{Vector()};
  rule.Next(kLambda, 1.0, 1.0, 1.0, 1.0);
  // z's secant 1 (bound 1/2), y's secant 40 = L_f + lambda L_g (bound
  // lambda / 80 = 0.05): the y-loop's decides, and l_f1 = 40 - 4 = 36.
  const double a = rule.Next(kLambda, 1.0, 1.0, 1.0, 1.0).alpha;
  rule.Observe(kLambda, 1.0, a, 1.0, 40.0 * a / kLambda);
  EXPECT_DOUBLE_EQ(rule.Part()[0], kLambda / 80.0);
  EXPECT_DOUBLE_EQ(rule.Estimate(kLambda).l_g1, 1.0);
  EXPECT_DOUBLE_EQ(rule.Estimate(kLambda).l_f1, 36.0);
}

TEST(SecantSteps, NoMoveKeepsTheProbeAndBadPartsAreRefused) {
  SecantSteps rule{Vector()};
  EXPECT_EQ(rule.Next(kLambda, 1.0, 0.0, 1.0, 0.0).alpha, 0.0);  // nothing to move
  rule.Observe(kLambda, 0.0, 0.0, 0.0, 0.0);
  EXPECT_EQ(rule.Part()[0], 0.0);
  EXPECT_TRUE(CheckSecantPart(rule.Part()).ok());
  Vector bad(2);
  bad << -1.0, 0.0;
  EXPECT_FALSE(CheckSecantPart(bad).ok());
  bad << std::nan(""), 0.0;
  EXPECT_FALSE(CheckSecantPart(bad).ok());
  EXPECT_FALSE(CheckSecantPart(Vector(3)).ok());
}

}  // namespace
}  // namespace f2obo
