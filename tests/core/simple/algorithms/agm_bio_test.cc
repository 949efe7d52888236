// AGM-BiO (Cao et al., Alg. 1) on the paper's linear inverse problem
// (Sec. 5, App. D.2): f = (1/2)||x||^2, g = (1/2)(1^T x - 1)^2 on Z = R^n_+,
// x* = (1/n) 1, f* = 1/(2n), g* = 0, L_f = 1, L_g = n, K = 1000 and
// gamma = 1/(2 (L_g/L_f) K^(2/3) + 2).  g satisfies a Hölderian error bound
// of order r = 2, for which Theorem 4.4 gives |f(x_K) - f*| = O(K^-2/3) and
// g(x_K) - g* = O(K^-4/3).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/simple/families/simple_families.h"
#include "core/simple/simple_registries.h"
#include "tests/core/simple/algorithms/simple_test_support.h"

namespace f2obo::testing {
namespace {

// One step's data: the inner row 1^T with target 1, no upper rows.
StepData OnesRow(int n) {
  return StepData{Batch{}, DenseBatch(Matrix::Ones(1, n), Vector::Ones(1))};
}

// The paper's setting (its experiment's gamma and K); the stream repeats
// the one row of B, so a window of one row is the paper's g.
std::unique_ptr<SimpleAlgorithm> PaperSetting(int n) {
  return MakeAlgorithm(
      "agm_bio", ConstraintSet::Box(0.0, kInfinity), n,
      [](AlgorithmOptions* o) {
        FindSimpleAlgorithm("agm_bio")->info.experiment(o);
        o->window_rows = 1;
      },
      /*upper_reads_rows=*/false);
}

// From x_0 = 0 (n = 3): a_0 = gamma/4, y_0 = z_0 = 0; the run on g takes
// w_1 = P(0 + 1/3) = (1/3) 1, so g_0 = g(w_1) = 0; the cut at y_0 is
// 1/2 - 1^T z <= 0; z_1 = P_{X_0}(0 - a_0 * 0) = (1/6) 1 = x_1.
TEST(AgmBio, FirstStepProjectsOntoTheCutAtTheRunsLevel) {
  constexpr int n = 3;
  RegisteredFamily family("linear_inverse", n);
  std::unique_ptr<SimpleAlgorithm> a = PaperSetting(n);
  ASSERT_NE(a, nullptr);
  SimpleRun run(*a, Vector::Zero(n), 1);
  SimpleReport r;
  ASSERT_TRUE(run.Step(*a, family, OnesRow(n), &r).ok());
  const double gamma = 1.0 / (2.0 * 3.0 * std::pow(1000.0, 2.0 / 3.0) + 2.0);
  EXPECT_DOUBLE_EQ(r.alpha, gamma / 4.0);
  EXPECT_EQ(r.l_f, 1.0);
  EXPECT_EQ(r.l_g, 3.0);
  EXPECT_NEAR(r.g_level, 0.0, 1e-15);
  EXPECT_EQ(r.inner_loss_before, 0.5);
  EXPECT_LT((run.x - Vector::Constant(n, 1.0 / 6.0)).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_EQ(run.decision, run.x);
  EXPECT_DOUBLE_EQ(run.aux[3][0], gamma / 4.0);  // A_1 = a_0
}

// g = -(1/2)||x||^2 (concave: its linearizations lie above it), f =
// (1/2)||x||^2: on the box [0, 1]^2 from x_0 = (1/2) 1 the run on g jumps
// to w_1 = P(x_0 + x_0) = 1 with g_0 = -1, and the cut at y_0 = x_0,
// -1/4 - (1/2)(1^T z - 1) <= -1, i.e. 1^T z >= 5/2, misses the box.
class ConcaveG final : public SimpleFamily {
 public:
  std::string_view name() const override { return "concave_g"; }
  int x_dim() const override { return 2; }
  bool upper_reads_rows() const override { return false; }
  absl::Status ValidateBatch(const Batch&, BatchRole) const override { return absl::OkStatus(); }
  double F(const VecIn& x, const BatchView&, Vector* grad) override {
    if (grad != nullptr) *grad = x;
    return 0.5 * x.squaredNorm();
  }
  double G(const VecIn& x, const BatchView&, Vector* grad) override {
    if (grad != nullptr) *grad = -x;
    return -0.5 * x.squaredNorm();
  }
  double SmoothnessF(const BatchView&) override { return 1.0; }
  double SmoothnessG(const BatchView&) override { return 1.0; }
};

// An empty X_k is not the session's failure: the step projects onto Z alone,
// z_1 = P_Z(z_0 - a_0 grad f(y_0)) = (1 - a_0)/2 1, and x_1 = z_1.
TEST(AgmBio, EmptyCutFallsBackToProjectingOntoZ) {
  ConcaveG family;
  std::unique_ptr<SimpleAlgorithm> a =
      MakeAlgorithm("agm_bio", ConstraintSet::Box(0.0, 1.0), 2, nullptr, false);
  ASSERT_NE(a, nullptr);
  SimpleRun run(*a, Vector::Constant(2, 0.5), 1);
  SimpleReport r;
  const StepData data{Batch{}, DenseBatch(Matrix::Zero(1, 2), Vector::Zero(1))};
  ASSERT_TRUE(run.Step(*a, family, data, &r).ok());
  EXPECT_EQ(r.g_level, -1.0);
  EXPECT_LT((run.x - Vector::Constant(2, 0.5 * (1.0 - r.alpha))).cwiseAbs().maxCoeff(), 1e-15);
}

// g = 1e300 (1^T x - 2e9), f = 0, from x_0 = (1e9, 1e9) on R^2: the cut's
// <grad g(y_0), y_0> = 2e309 overflows although g(y_0) = 0 and g_0 are
// finite.  The run on g (L_g = 1e300) takes w_1 = x_0 - 1, so g_0 = -2e300
// and the cut, divided by 1e300, is 1^T z <= 2e9 - 2: z_1 = x_0 - 1 = x_1
// (with the cut dropped it would stay x_0).
class SteepLinearG final : public SimpleFamily {
 public:
  std::string_view name() const override { return "steep_linear_g"; }
  int x_dim() const override { return 2; }
  bool upper_reads_rows() const override { return false; }
  absl::Status ValidateBatch(const Batch&, BatchRole) const override { return absl::OkStatus(); }
  double F(const VecIn&, const BatchView&, Vector* grad) override {
    if (grad != nullptr) *grad = Vector::Zero(2);
    return 0.0;
  }
  double G(const VecIn& x, const BatchView&, Vector* grad) override {
    if (grad != nullptr) *grad = Vector::Constant(2, 1e300);
    return 1e300 * ((x[0] - 1e9) + (x[1] - 1e9));
  }
  double SmoothnessF(const BatchView&) override { return 1.0; }
  double SmoothnessG(const BatchView&) override { return 1e300; }
};

TEST(AgmBio, ACutWhoseTermsOverflowIsFormedScaled) {
  SteepLinearG family;
  std::unique_ptr<SimpleAlgorithm> a =
      MakeAlgorithm("agm_bio", ConstraintSet::None(), 2, nullptr, false);
  ASSERT_NE(a, nullptr);
  SimpleRun run(*a, Vector::Constant(2, 1e9), 1);
  SimpleReport r;
  const StepData data{Batch{}, DenseBatch(Matrix::Zero(1, 2), Vector::Zero(1))};
  ASSERT_TRUE(run.Step(*a, family, data, &r).ok());
  EXPECT_EQ(r.g_level, -2e300);
  EXPECT_LT((run.x - Vector::Constant(2, 1e9 - 1.0)).cwiseAbs().maxCoeff(), 1e-6);
}

TEST(AgmBio, OptionsNameTheirRules) {
  const SimpleAlgorithmEntry* e = FindSimpleAlgorithm("agm_bio");
  ASSERT_NE(e, nullptr);
  AlgorithmOptions o = DefaultOptions(e->info);
  EXPECT_EQ(o.agm_gamma, 0.0);  // the paper's formula
  EXPECT_EQ(o.agm_horizon, 0);  // a stream of unknown length: doubling epochs
  o.agm_gamma = 1.5;
  EXPECT_THAT(std::string(ValidateAlgorithmOptions(e->info, o).message()),
              ::testing::HasSubstr("options.agm_gamma: 1.5 must be in [0, 1]"));
  o.agm_gamma = 0.5;
  o.smoothness_g = -1.0;
  EXPECT_THAT(std::string(ValidateAlgorithmOptions(e->info, o).message()),
              ::testing::HasSubstr("options.smoothness_g: -1 must be >= 0 and finite"));
  o.smoothness_g = 0.0;
  EXPECT_TRUE(ValidateAlgorithmOptions(e->info, o).ok());
  o.agm_horizon = -1;
  EXPECT_THAT(std::string(ValidateAlgorithmOptions(e->info, o).message()),
              ::testing::HasSubstr("options.agm_horizon: -1 must be >= 0"));
}

struct Rates {
  double f_slope, g_slope, f_last, g_last;
};

// K steps; |f(x_k) - f*| and g(x_k) - g* at every k, slopes fitted over
// k in [K/2, K].
Rates RunLinearInverse(int n) {
  constexpr int kSteps = 1000;
  RegisteredFamily family("linear_inverse", n);
  std::unique_ptr<SimpleAlgorithm> a = PaperSetting(n);
  EXPECT_NE(a, nullptr);
  SimpleRun run(*a, Vector::Zero(n), 1);
  const double f_star = 0.5 / n;
  std::vector<double> k, f_gap, g_gap;
  for (int i = 1; i <= kSteps; ++i) {
    EXPECT_TRUE(run.Step(*a, family, OnesRow(n)).ok());
    k.push_back(i);
    f_gap.push_back(std::abs(0.5 * run.decision.squaredNorm() - f_star));
    const double r = run.decision.sum() - 1.0;
    g_gap.push_back(0.5 * r * r);
  }
  EXPECT_TRUE((run.decision.array() >= 0.0).all());
  return {LogLogSlope(k, f_gap, kSteps / 2), LogLogSlope(k, g_gap, kSteps / 2), f_gap.back(),
          g_gap.back()};
}

// The fitted slopes must be at least as steep as Theorem 4.4's exponents
// (-2/3 and -4/3), with 0.05 of slack for the fit.  Reached from x_0 = 0
// (the point is approached from inside {f < f*}): n = 3: |f(x_K) - f*| =
// 2.5e-4 (slope -1.00), g(x_K) - g* = 2.9e-7 (slope -2.00); n = 100: 7.6e-6
// (slope -1.00) and 2.9e-7 (slope -2.00).  A Python transcription of
// Alg. 1 gives the same figures.
TEST(AgmBio, LinearInverseProblemFollowsTheoremFourFourRates) {
  for (int n : {3, 100}) {
    const Rates r = RunLinearInverse(n);
    std::printf(
        "agm_bio n = %d: |f(x_K) - f*| = %.3g (slope %.3f), g(x_K) - g* = %.3g "
        "(slope %.3f)\n",
        n, r.f_last, r.f_slope, r.g_last, r.g_slope);
    EXPECT_LT(r.f_slope, -2.0 / 3.0 + 0.05) << n;
    EXPECT_LT(r.g_slope, -4.0 / 3.0 + 0.05) << n;
  }
}

// The smoothness constants decide AGM-BiO's steps a_k = gamma (k+1)/(4 L_f)
// and gamma = 1/(2 (L_g/L_f) K^(2/3) + 2): a bound loose by the rank makes
// every step that much shorter.  Same stream, same options, once with the
// families' default constants (lambda_max by power iteration) and once with
// the Frobenius bounds ||A||_F^2 / rows they replaced (issue 29; measured
// from outside there: l2 ball, T = 200, inner gap 1.3e-3 vs 2.1e-4).
double g_frobenius_f = 0.0, g_frobenius_g = 0.0;

TEST(AgmBio, ExactSmoothnessConstantsShrinkTheGapsAgainstTheFrobeniusBound) {
  const OverParameterizedRegression p(40, 20, 60, 0.1, 29);
  ASSERT_LT(p.x_star.norm(), 2.0);  // the ball below is inactive at x*
  const ConstraintSet ball = ConstraintSet::Ball(2.0);
  g_frobenius_f = p.a_upper.rowwise().squaredNorm().mean();
  g_frobenius_g = p.a_inner.rowwise().squaredNorm().mean();
  struct Gaps {
    double inner, outer, l_g;
    SmoothnessSource source;
  };
  auto run = [&](void (*adjust)(AlgorithmOptions*)) {
    RegisteredFamily family("least_squares", 40);
    std::unique_ptr<SimpleAlgorithm> a = MakeAlgorithm("agm_bio", ball, 40, adjust);
    EXPECT_NE(a, nullptr);
    SimpleRun run(*a, Vector::Zero(40), 1);
    SimpleReport report;
    for (int k = 0; k < 200; ++k) {
      EXPECT_TRUE(run.Step(*a, family, p.CyclicStep(k, 60, 20), &report).ok());
    }
    return Gaps{p.FullG(run.decision), std::abs(p.FullF(run.decision) - p.f_star), report.l_g,
                report.smoothness_source};
  };
  const Gaps exact = run([](AlgorithmOptions* o) { o->window_rows = 120; });
  const Gaps frobenius = run([](AlgorithmOptions* o) {
    o->window_rows = 120;
    o->smoothness_f = g_frobenius_f;
    o->smoothness_g = g_frobenius_g;
  });
  std::printf(
      "agm_bio T = 200: inner gap %.3g (exact L) vs %.3g (Frobenius), |f - f*| %.3g vs %.3g\n",
      exact.inner, frobenius.inner, exact.outer, frobenius.outer);
  EXPECT_EQ(exact.source, SmoothnessSource::kPowerIteration);
  EXPECT_EQ(frobenius.source, SmoothnessSource::kNone);
  // The window holds whole copies of the rows: L_g is lambda_max(A^T A / n).
  const double top = Eigen::SelfAdjointEigenSolver<Matrix>(p.a_inner.transpose() * p.a_inner / 20.0)
                         .eigenvalues()
                         .maxCoeff();
  EXPECT_GE(exact.l_g, top * (1.0 - 1e-12));
  EXPECT_LE(exact.l_g, top * kPowerSafety * (1.0 + 1e-12));
  EXPECT_LT(exact.inner, 0.5 * frobenius.inner);
  EXPECT_LT(exact.outer, frobenius.outer);
}

// Issue 29: agm_horizon = 0 (the default) is a stream of unknown length,
// epochs of K = 1000, 2000, 4000, ... outer iterations.  The first epoch is
// the run with K = 1000 bit for bit; each later epoch is, bit for bit, a
// fresh AGM-BiO with the doubled horizon started from the point reached
// (InitialAux(x): z_0 = w_0 = v_1 = x, A_0 = 0, theta_1 = 1; the windows as
// they are), its k counting from 0 again: epoch 2 over all of its 2,000
// steps, epoch 3 over its first 20.  A K set by the user never restarts.
void Window20(AlgorithmOptions* o) { o->window_rows = 20; }
void Window20K1000(AlgorithmOptions* o) {
  o->window_rows = 20;
  o->agm_horizon = 1000;
}
void Window20K2000(AlgorithmOptions* o) {
  o->window_rows = 20;
  o->agm_horizon = 2000;
}
void Window20K4000(AlgorithmOptions* o) {
  o->window_rows = 20;
  o->agm_horizon = 4000;
}

// x, decision and every aux part equal to the bit (t may differ).
bool SameIterates(const SimpleRun& a, const SimpleRun& b) {
  SimpleRun same_t = b;
  same_t.t = a.t;
  return a.BitEquals(same_t);
}

// A fresh run of `algorithm` from `from`'s point, holding its windows.
SimpleRun FreshFrom(const SimpleAlgorithm& algorithm, const SimpleRun& from) {
  SimpleRun fresh(algorithm, from.x, 1);
  const StateParts init = algorithm.InitialAux(from.x);
  fresh.aux = from.aux;
  for (int i = 0; i < 4; ++i) fresh.aux[i] = init[i];  // z, w, v, {A, theta}
  fresh.rng = from.rng;
  return fresh;
}

TEST(AgmBio, UnknownHorizonRestartsAsAFreshRunWithTheDoubledHorizon) {
  const OverParameterizedRegression p(8, 4, 12, 0.1, 31);
  RegisteredFamily family("least_squares", 8);
  const ConstraintSet ball = ConstraintSet::L1Ball(10.0);
  std::unique_ptr<SimpleAlgorithm> doubling = MakeAlgorithm("agm_bio", ball, 8, &Window20);
  std::unique_ptr<SimpleAlgorithm> k1000 = MakeAlgorithm("agm_bio", ball, 8, &Window20K1000);
  std::unique_ptr<SimpleAlgorithm> k2000 = MakeAlgorithm("agm_bio", ball, 8, &Window20K2000);
  std::unique_ptr<SimpleAlgorithm> k4000 = MakeAlgorithm("agm_bio", ball, 8, &Window20K4000);
  ASSERT_TRUE(doubling && k1000 && k2000 && k4000);
  SimpleRun run(*doubling, Vector::Zero(8), 1), fixed(*k1000, Vector::Zero(8), 1);
  Rng rng(7);
  SimpleReport r, rf;
  for (int k = 0; k < 1000; ++k) {
    const StepData data = p.DrawStep(3, &rng);
    ASSERT_TRUE(run.Step(*doubling, family, data, &r).ok());
    ASSERT_TRUE(fixed.Step(*k1000, family, data, &rf).ok());
  }
  ASSERT_TRUE(run.BitEquals(fixed)) << "the first epoch is the paper's K = 1000 run";

  SimpleRun second = FreshFrom(*k2000, run);
  SimpleReport r2;
  for (int k = 1000; k < 3000; ++k) {
    const StepData data = p.DrawStep(3, &rng);
    ASSERT_TRUE(run.Step(*doubling, family, data, &r).ok());
    ASSERT_TRUE(second.Step(*k2000, family, data, &r2).ok());
    ASSERT_TRUE(fixed.Step(*k1000, family, data, &rf).ok());
    ASSERT_TRUE(SameIterates(run, second)) << "outer iteration " << k;
    ASSERT_EQ(r.alpha, r2.alpha) << "outer iteration " << k;
  }
  // The restart reset A and k: epoch 2's last step is a = gamma_2000 *
  // 2000 / (4 L_f), the K = 1000 run's gamma_1000 * 3000 / (4 L_f).
  EXPECT_FALSE(SameIterates(run, fixed));
  EXPECT_LT(r.alpha, rf.alpha);

  SimpleRun third = FreshFrom(*k4000, run);
  SimpleReport r3;
  for (int k = 3000; k < 3020; ++k) {
    const StepData data = p.DrawStep(3, &rng);
    ASSERT_TRUE(run.Step(*doubling, family, data, &r).ok());
    ASSERT_TRUE(third.Step(*k4000, family, data, &r3).ok());
    ASSERT_TRUE(second.Step(*k2000, family, data, &r2).ok());
    ASSERT_TRUE(SameIterates(run, third)) << "outer iteration " << k;
  }
  EXPECT_FALSE(SameIterates(run, second)) << "epoch 3 starts at outer iteration 3000";
}

// A gamma set by the user has no horizon to double: the default horizon
// (0) runs it as one epoch, the same run as with any K.
TEST(AgmBio, AGivenGammaNeverRestarts) {
  const OverParameterizedRegression p(6, 3, 9, 0.1, 37);
  RegisteredFamily family("least_squares", 6);
  const ConstraintSet ball = ConstraintSet::L1Ball(10.0);
  std::unique_ptr<SimpleAlgorithm> unset =
      MakeAlgorithm("agm_bio", ball, 6, [](AlgorithmOptions* o) {
        o->window_rows = 10;
        o->agm_gamma = 0.01;
      });
  std::unique_ptr<SimpleAlgorithm> k1000 =
      MakeAlgorithm("agm_bio", ball, 6, [](AlgorithmOptions* o) {
        o->window_rows = 10;
        o->agm_gamma = 0.01;
        o->agm_horizon = 1000;
      });
  ASSERT_TRUE(unset && k1000);
  SimpleRun a(*unset, Vector::Zero(6), 1), b(*k1000, Vector::Zero(6), 1);
  Rng rng(5);
  for (int k = 0; k < 1010; ++k) {
    const StepData data = p.DrawStep(2, &rng);
    ASSERT_TRUE(a.Step(*unset, family, data).ok());
    ASSERT_TRUE(b.Step(*k1000, family, data).ok());
  }
  EXPECT_TRUE(a.BitEquals(b));
}

}  // namespace
}  // namespace f2obo::testing
