// Second-order baselines (SPEC section 3 "Baselines"): their hypergradients
// against closed forms, finite differences and the exact hypergradient, and
// the x-step directions (window mean, momentum) they are documented to take.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::ConfigFor;
using testing::RandomVector;

constexpr int kD1 = 3, kD2 = 4;
constexpr double kMu = 2.0;

// A static quadratic problem with least-squares f (grad2_yy g = mu I,
// grad2_xy g = -mu M^T).
struct Quadratic {
  Matrix M;
  Vector c, d;
  StepData step;
  FamilyConfig family;
  explicit Quadratic(uint64_t seed) {
    std::mt19937_64 rng(seed);
    M = testing::WellConditioned(kD2, kD1, 0.7, 1.3, rng);
    c = RandomVector(kD2, rng);
    d = RandomVector(kD2, rng);
    step = testing::QuadraticStep(M, c, d);
    family.name = "quadratic";
    family.x_dim = kD1;
    family.y_dim = kD2;
    family.mu = kMu;
  }
};

// A ridge_hpo step with a box X (g is strongly convex for x >= 0).
struct Ridge {
  StepData step;
  FamilyConfig family;
  explicit Ridge(uint64_t seed, int dim = 4) {
    std::mt19937_64 rng(seed);
    const Vector w = RandomVector(dim, rng);
    step.inner = testing::RegressionBatch(30, w, 0.5, false, rng);
    step.upper = testing::RegressionBatch(20, w, 0.1, false, rng);
    family.name = "ridge_hpo";
    family.features = dim;
    family.mu0 = 0.05;
  }
};

TEST(Obbo, HypergradientIsTheDerivativeOfTheUnrolledQuadraticInnerSolution) {
  const Quadratic q(61);
  std::mt19937_64 rng(62);
  SessionConfig config = ConfigFor("obbo", q.family, ConstraintSet::None());
  const int K = 5;
  const double alpha = 0.1;
  config.options.inner_steps = K;
  config.options.alpha = alpha;
  config.x0 = RandomVector(kD1, rng);
  config.y0 = RandomVector(kD2, rng);
  auto session = *Session::Create(config);
  const StepReport report = *session->Step(q.step);

  // y^K(x) = r y^0 + (1 - r)(M x + c), r = (1 - alpha mu)^K, so
  // dy^K/dx = (1 - r) M and h = (1 - r) M^T grad_y f(y^K).
  const double r = std::pow(1.0 - alpha * kMu, K);
  const Vector y_k = r * config.y0 + (1.0 - r) * (q.M * config.x0 + q.c);
  const Vector expected = (1.0 - r) * q.M.transpose() * (y_k - q.d);
  EXPECT_LT((BilevelPart(report).hypergradient - expected).norm(), 1e-10)
      << BilevelPart(report).hypergradient.transpose() << "\nvs " << expected.transpose();
  EXPECT_LT((BilevelView(session->state()).y - y_k).norm(), 1e-12);
  EXPECT_EQ(BilevelPart(report).y_iterations, K);
  EXPECT_NEAR(BilevelPart(report).residual_y, (kMu * (y_k - q.M * config.x0 - q.c)).norm(), 1e-12);
}

TEST(Obbo, HypergradientMatchesFiniteDifferencesOfTheUnrolledRidgeObjective) {
  const Ridge p(63);
  std::mt19937_64 rng(64);
  const int dim = 4, K = 7;
  const double alpha = 0.3;
  SessionConfig config = ConfigFor("obbo", p.family, ConstraintSet::Box(0.0, 5.0));
  config.options.inner_steps = K;
  config.options.alpha = alpha;
  config.x0 = Vector::Constant(dim, 0.5) + 0.2 * RandomVector(dim, rng).cwiseAbs();
  config.y0 = RandomVector(dim, rng);
  auto session = *Session::Create(config);
  const StepReport report = *session->Step(p.step);

  // x -> f(x, y^K(x)) with y^K from the same K steps on an independent family.
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(p.family);
  family->Prepare(p.step);
  const BatchView inner = BatchView::All(p.step.inner);
  const BatchView upper = BatchView::All(p.step.upper);
  auto unrolled = [&](const Vector& x) {
    Vector y = config.y0, gy(dim);
    for (int k = 0; k < K; ++k) {
      family->G(x, y, inner, nullptr, &gy);
      y -= alpha * gy;
    }
    return family->F(x, y, upper, nullptr, nullptr);
  };
  Vector fd(dim);
  const double eps = 1e-5;
  for (int j = 0; j < dim; ++j) {
    Vector plus = config.x0, minus = config.x0;
    plus[j] += eps;
    minus[j] -= eps;
    fd[j] = (unrolled(plus) - unrolled(minus)) / (2 * eps);
  }
  EXPECT_LT((BilevelPart(report).hypergradient - fd).norm(), 1e-6 * fd.norm())
      << BilevelPart(report).hypergradient.transpose() << "\nvs fd " << fd.transpose();
}

// With the inner problem solved tightly and M = 500 linear-system steps, an
// AID hypergradient is the exact one (paper Eq. 1) up to the solver's error.
void ExpectExactHypergradient(const std::string& algorithm, const FamilyConfig& fam,
                              const ConstraintSet& set, const StepData& step, const Vector& x0) {
  SessionConfig config = ConfigFor(algorithm, fam, set);
  config.x0 = x0;
  config.options.linear_system_steps = 500;
  config.options.inner_steps = 2000;  // sobow: K fixed
  config.options.max_inner_iterations = 5000;
  config.options.delta = 1e-13;  // aobo: adaptive
  auto session = *Session::Create(config);
  const StepReport report = *session->Step(step);
  const TrueHypergradient truth = ComputeTrueHypergradient(
      *testing::PreparedFamily(*session, step), x0, step,
      Vector::Zero(BilevelView(session->state()).y.size()), ExactMetricsOptions{});
  EXPECT_LT((BilevelPart(report).hypergradient - truth.grad).norm(), 1e-8 * (1 + truth.grad.norm()))
      << algorithm << " on " << fam.name << ": " << BilevelPart(report).hypergradient.transpose()
      << "\nvs exact " << truth.grad.transpose();
  EXPECT_LT(BilevelPart(report).residual_y, 1e-10) << algorithm;
  EXPECT_FALSE(report.cap_hit);
}

TEST(AidBaselines, AoboAndSobowHypergradientsAreExactWithManyLinearSystemSteps) {
  const Quadratic q(65);
  const Ridge p(66);
  std::mt19937_64 rng(67);
  const Vector xq = RandomVector(kD1, rng);
  const Vector xr = Vector::Constant(4, 0.5) + RandomVector(4, rng).cwiseAbs();
  for (const char* algorithm : {"aobo", "sobow"}) {
    ExpectExactHypergradient(algorithm, q.family, ConstraintSet::None(), q.step, xq);
    ExpectExactHypergradient(algorithm, p.family, ConstraintSet::Box(0.0, 5.0), p.step, xr);
  }
}

TEST(Sobow, XStepUsesTheUniformMeanOfTheLastWHypergradients) {
  const Quadratic q(68);
  SessionConfig config = ConfigFor("sobow", q.family, ConstraintSet::None());
  config.options.window = 4;
  config.options.gamma = 0.2;
  auto session = *Session::Create(config);
  std::deque<Vector> window;
  for (int t = 1; t <= 12; ++t) {
    const Vector x = session->state().x;
    const StepReport report = *session->Step(q.step);
    window.push_back(BilevelPart(report).hypergradient);
    if (window.size() > 4) window.pop_front();
    Vector mean = Vector::Zero(kD1);
    for (const Vector& h : window) mean += h;
    mean /= static_cast<double>(window.size());
    EXPECT_LT((session->state().x - (x - 0.2 * mean)).norm(), 1e-13) << "t = " << t;
  }
}

TEST(Sogd, XStepFollowsTheMomentumOfTheHypergradients) {
  const Quadratic q(69);  // no sample rows: every draw is the whole step
  SessionConfig config = ConfigFor("sogd", q.family, ConstraintSet::None());
  config.options.gamma = 0.2;
  auto session = *Session::Create(config);
  Vector m;
  for (int t = 1; t <= 12; ++t) {
    const Vector x = session->state().x;
    const StepReport report = *session->Step(q.step);
    m = t == 1 ? BilevelPart(report).hypergradient
               : (0.9 * m + 0.1 * BilevelPart(report).hypergradient).eval();
    EXPECT_LT((session->state().x - (x - 0.2 * m)).norm(), 1e-13) << "t = " << t;
  }
}

TEST(Aobo, StopsAtTheIterationCapAndReportsIt) {
  const Quadratic q(70);
  SessionConfig config = ConfigFor("aobo", q.family, ConstraintSet::None());
  config.options.delta = 1e-12;
  config.options.alpha = 0.1;  // a fixed step: 1/L_g1 (the default) solves this quadratic at once
  config.options.max_inner_iterations = 3;
  config.options.linear_system_steps = 3;
  auto session = *Session::Create(config);
  const StepReport report = *session->Step(q.step);
  EXPECT_TRUE(report.cap_hit);
  EXPECT_EQ(BilevelPart(report).y_iterations, 3);
  EXPECT_EQ(session->state().cap_hits, 1);
}

TEST(Baselines, LeaveLambdaUnchangedAndReportZero) {
  const Quadratic q(71);
  for (const char* algorithm : {"obbo", "sobow", "aobo", "fsobo", "sobbo", "sogd"}) {
    auto session = *Session::Create(ConfigFor(algorithm, q.family, ConstraintSet::None()));
    const double lambda = BilevelView(session->state()).lambda;
    const StepReport report = *session->Step(q.step);
    EXPECT_EQ(BilevelPart(report).lambda, 0.0) << algorithm;
    EXPECT_EQ(BilevelView(session->state()).lambda, lambda) << algorithm;
    EXPECT_GE(BilevelPart(report).y_iterations, 1) << algorithm;
  }
}

TEST(Obbo, CountsEveryOraclePassInRowsProcessed) {
  const Ridge p(72);
  SessionConfig config = ConfigFor("obbo", p.family, ConstraintSet::Box(0.0, 5.0));
  config.options.inner_steps = 4;
  auto session = *Session::Create(config);
  const StepReport report = *session->Step(p.step);
  // K forward gradients, f once, 2K - 1 HVPs backward, one residual pass.
  EXPECT_EQ(report.rows_processed, 4 * 30 + 20 + 7 * 30 + 30);
}

// The window's {filled, next} bookkeeping lives in the checkpointed state,
// so an imported state can hold any finite double there: it is clamped to
// the valid range in double, never converted out of int's range (undefined
// behaviour; on x86 1e300 became INT_MIN and so 0 entries, not w).
TEST(HypergradientWindow, CorruptBookkeepingIsClampedToTheValidRange) {
  const int width = 4;
  const HypergradientWindow window(0, width, 2);
  std::vector<int> sizes;
  window.AppendLayout(&sizes);
  ASSERT_EQ(sizes.size(), static_cast<size_t>(width + 1));
  auto fresh = [&] {
    StateParts aux;
    for (int i = 0; i < width; ++i) aux.push_back(Vector::Constant(2, i + 1.0));
    aux.push_back(Vector::Zero(2));
    return aux;
  };
  const Vector h = Vector::Constant(2, 10.0);
  Vector mean(2);

  // filled = 1e300 -> w, next = -1e300 -> 0: slot 0 takes h, mean of all 4.
  StateParts aux = fresh();
  aux[width] << 1e300, -1e300;
  window.PushAndAverage(h, &aux, &mean);
  EXPECT_EQ(aux[width][0], width);
  EXPECT_EQ(aux[width][1], 1);
  EXPECT_DOUBLE_EQ(mean[0], (10.0 + 2.0 + 3.0 + 4.0) / 4.0);

  // next = 1e10 -> w - 1: the last slot takes h.
  aux = fresh();
  aux[width] << 2.0, 1e10;
  window.PushAndAverage(h, &aux, &mean);
  EXPECT_EQ(aux[width - 1][0], 10.0);
  EXPECT_EQ(aux[width][0], 3);
  EXPECT_EQ(aux[width][1], 0);
  EXPECT_DOUBLE_EQ(mean[0], (1.0 + 2.0 + 3.0) / 3.0);

  // NaN counts read as 0.
  aux = fresh();
  aux[width] << std::nan(""), std::nan("");
  window.PushAndAverage(h, &aux, &mean);
  EXPECT_EQ(aux[width][0], 1);
  EXPECT_EQ(aux[width][1], 1);
  EXPECT_DOUBLE_EQ(mean[0], 10.0);
}

}  // namespace
}  // namespace f2obo
