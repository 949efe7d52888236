// Every algorithm in the registry, iterated by name so that a newly
// registered one is covered without editing this file: on a static,
// well-conditioned quadratic stream, ||grad F(x_T)|| (computed independently
// by the exact metrics, Newton-CG + CG on HVPs) falls below a tolerance.
//
// One configuration serves all: the registry defaults of each algorithm,
// plus settings that every algorithm either reads the same way or ignores
// (alpha = 1/mu is the exact inner GD step for g's Hessian mu I; gamma is
// the upper step; tight inner tolerances for the adaptive loops).  The
// hand-tuned per-algorithm convergence tests (f2obo_test.cc,
// baselines_stream_test.cc, af2obo_test.cc, sf2obo_test.cc, svrb_test.cc,
// pzobo_test.cc) pin down rates and settings; this one only guarantees that
// nothing registered is left without an end-to-end convergence check.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>

#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

constexpr int kD1 = 3, kD2 = 4;
constexpr double kMu = 2.0;
constexpr int kSteps = 3000;

// Deterministic algorithms must reach this; a name not listed in
// kLooserTolerance gets it, so a new algorithm is held to the strict bar
// until someone decides otherwise.
constexpr double kTolerance = 1e-3;

double ToleranceFor(const std::string& algorithm) {
  // The stochastic algorithms (mini-batches, random directions) get a looser
  // bar.  On this sample-free family they actually reach ~1e-13 (nothing to
  // sub-sample, and the direction noise of pzobo vanishes with the
  // gradient), but this is a coverage test, not a rate test: a change that
  // adds honest sampling noise must not fail it.  With gamma = 0.02 and
  // 3000 steps every algorithm ends at least 4x below its bar (af2obo,
  // the closest, at 2.4e-4, limited by its delta-based inner stopping).
  static const std::map<std::string, double> kLooserTolerance = {
      {"sf2obo", 1e-2}, {"sobbo", 1e-2}, {"sogd", 1e-2},
      {"svrb", 1e-2},   {"pzobo", 1e-2}, {"pzobo_s", 1e-2},
  };
  const auto it = kLooserTolerance.find(algorithm);
  return it == kLooserTolerance.end() ? kTolerance : it->second;
}

FamilyConfig QuadraticFamily() {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = kD1;
  fam.y_dim = kD2;
  fam.mu = kMu;
  return fam;
}

class RegistryConvergence : public ::testing::TestWithParam<std::string> {};

TEST_P(RegistryConvergence, DrivesTheExactHypergradientBelowItsToleranceOnStaticQuadratic) {
  const std::string& algorithm = GetParam();
  std::mt19937_64 rng(4242);
  const Matrix M = testing::WellConditioned(kD2, kD1, 0.7, 1.3, rng);
  const Vector c = testing::RandomVector(kD2, rng), d = testing::RandomVector(kD2, rng);
  const StepData step = testing::QuadraticStep(M, c, d);

  SessionConfig config = testing::ConfigFor(algorithm, QuadraticFamily(), ConstraintSet::None());
  config.seed = 17;
  config.options.alpha = 1.0 / kMu;
  config.options.gamma = 0.02;
  config.options.beta = 0.5;
  config.options.delta = 1e-6;
  config.options.delta_y = 1e-6;
  config.options.delta_z = 1e-6;
  auto session = Session::Create(config);
  ASSERT_TRUE(session.ok()) << algorithm << ": " << session.status();

  auto family = *CreateBilevelFamily(QuadraticFamily());
  family->Prepare(step);
  const ExactMetricsOptions exact;
  auto grad_norm = [&](const SessionState& s) {
    return ComputeTrueHypergradient(*family, s.x, step, BilevelView(s).y, exact).grad.norm();
  };
  const double initial = grad_norm((*session)->state());
  ASSERT_GT(initial, 1.0);  // the start is far from stationary
  for (int t = 1; t <= kSteps; ++t) {
    const auto r = (*session)->Step(step);
    ASSERT_TRUE(r.ok()) << algorithm << " at t = " << t << ": " << r.status();
  }
  const double final_norm = grad_norm((*session)->state());
  // The exact metrics against the closed form grad F(x) = M^T (M x + c - d)
  // of least-squares f (y*(x) = M x + c), so the bar is measured correctly.
  const Vector x = (*session)->state().x;
  EXPECT_NEAR(final_norm, (M.transpose() * (M * x + c - d)).norm(), 1e-8) << algorithm;
  EXPECT_LT(final_norm, ToleranceFor(algorithm))
      << algorithm << ": from ||grad F(x_1)|| = " << initial
      << ", x_T = " << (*session)->state().x.transpose();
}

INSTANTIATE_TEST_SUITE_P(EveryRegisteredAlgorithm, RegistryConvergence,
                         ::testing::ValuesIn(AlgorithmNames(ProblemClass::kBilevel)),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace f2obo
