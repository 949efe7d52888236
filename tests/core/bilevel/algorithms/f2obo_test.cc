// F2OBO (paper Algorithm 1) on static streams with known solutions.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <cmath>
#include <limits>
#include <random>

#include "core/bilevel/bilevel_state.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::ConfigFor;
using testing::RandomVector;

TEST(F2obo, DrivesHypergradientBelow1e4OnStaticQuadraticStream) {
  std::mt19937_64 rng(21);
  const int d1 = 5, d2 = 8;
  const double mu = 2.0;
  const Matrix M = testing::WellConditioned(d2, d1, 0.7, 1.3, rng);
  const Vector c = RandomVector(d2, rng), d = RandomVector(d2, rng);
  const StepData step = testing::QuadraticStep(M, c, d);

  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = d1;
  fam.y_dim = d2;
  fam.mu = mu;
  SessionConfig config = ConfigFor("f2obo", fam, ConstraintSet::None());
  config.options.inner_steps = 20;
  config.options.lambda1 = 5;
  config.options.tau = 1;
  config.options.alpha = 1.0 / mu;
  config.options.beta = 0.5;  // beta_t = 0.5 / lambda_t (scaled)
  config.options.gamma = 0.1;
  auto session = *Session::Create(config);

  // grad F(x) = M^T (M x + c - d): closed form for least-squares f.
  auto grad_f = [&](const Vector& x) { return (M.transpose() * (M * x + c - d)).eval(); };
  int reached = -1;
  for (int t = 1; t <= 3000; ++t) {
    ASSERT_TRUE(session->Step(step).ok());
    if (grad_f(session->state().x).norm() < 1e-4) {
      reached = t;
      break;
    }
  }
  EXPECT_GT(reached, 0) << "final ||grad F|| = " << grad_f(session->state().x).norm();
}

// F over a box, minimized independently by projected gradient on the
// closed form y*(x) = H(x)^-1 A^T b / n, grad F = -y* .* (H^-1 grad_y f).
struct RidgeClosedForm {
  RowMatrix a_in, a_up;
  Vector b_in, b_up;
  double mu0;
  Vector Gradient(const Vector& x) const {
    const int n = static_cast<int>(a_in.rows()), m = static_cast<int>(a_up.rows());
    Matrix h = a_in.transpose() * a_in / n;
    h.diagonal() += (x.array() + mu0).matrix();
    const Eigen::LDLT<Matrix> ldlt(h);
    const Vector ys = ldlt.solve(a_in.transpose() * b_in / n);
    const Vector gf = a_up.transpose() * (a_up * ys - b_up) / m;
    return -(ys.array() * ldlt.solve(gf).array()).matrix();
  }
};

TEST(F2obo, ReachesTheBoxConstrainedMinimizerOnStaticRidgeStream) {
  std::mt19937_64 rng(22);
  const int dim = 4;
  const Vector w = RandomVector(dim, rng);
  StepData step;
  // Few noisy inner rows, many clean upper rows: the best penalties are
  // moderate, so most coordinates of the minimizer are interior.
  step.inner = testing::RegressionBatch(12, w, 1.0, false, rng);
  step.upper = testing::RegressionBatch(50, w, 0.1, false, rng);
  const double mu0 = 0.05, lo = 0.05, hi = 5.0;
  const RidgeClosedForm cf{step.inner.dense, step.upper.dense, step.inner.targets,
                           step.upper.targets, mu0};
  ConstraintSet box = ConstraintSet::Box(lo, hi);

  // Independent minimizer: projected gradient descent on the closed form.
  Vector x_ref = Vector::Constant(dim, 0.5);
  for (int it = 0; it < 200000; ++it) {
    const Vector next = (x_ref - 0.5 * cf.Gradient(x_ref)).cwiseMax(lo).cwiseMin(hi);
    if ((next - x_ref).norm() < 1e-14) break;
    x_ref = next;
  }
  Vector mapping(dim);
  GradientMapping(box, x_ref, cf.Gradient(x_ref), 0.5, &mapping);
  ASSERT_LT(mapping.norm(), 1e-10) << "reference did not converge";

  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = dim;
  fam.mu0 = mu0;
  SessionConfig config = ConfigFor("f2obo", fam, box);
  config.x0 = Vector::Constant(dim, 0.5);
  // g is only (lo + mu0)-strongly convex: K must cover kappa_g ~ 35.
  config.options.inner_steps = 100;
  config.options.alpha_auto = true;  // from the HVP power iteration
  config.options.beta_auto = true;
  config.options.gamma = 2.0;
  auto session = *Session::Create(config);
  for (int t = 1; t <= 3000; ++t) ASSERT_TRUE(session->Step(step).ok());
  EXPECT_LT((session->state().x - x_ref).norm(), 1e-3)
      << "x = " << session->state().x.transpose() << "\nref " << x_ref.transpose();
}

TEST(F2obo, ReportsTheAutoStepSizesItUsed) {
  std::mt19937_64 rng(23);
  const Matrix M = testing::WellConditioned(3, 2, 1.0, 1.0, rng);
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  fam.mu = 4.0;
  SessionConfig config = ConfigFor("f2obo", fam, ConstraintSet::None());
  config.options.alpha_auto = config.options.beta_auto = true;
  auto session = *Session::Create(config);
  const auto report =
      session->Step(testing::QuadraticStep(M, RandomVector(3, rng), RandomVector(3, rng)));
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(BilevelPart(*report).step_sizes_auto);
  EXPECT_DOUBLE_EQ(BilevelPart(*report).l_g1, 4.0);  // exact for the quadratic family
  // beta_t = 1 / (2 lambda_t L_g1 + L_f1) with lambda_1 = 5, L_f1 = 1, and
  // the z-step matched to it: alpha = lambda_t beta_t (MatchedAlpha).
  EXPECT_DOUBLE_EQ(BilevelPart(*report).beta, 1.0 / (2.0 * 5.0 * 4.0 + 1.0));
  EXPECT_DOUBLE_EQ(BilevelPart(*report).alpha, 5.0 / (2.0 * 5.0 * 4.0 + 1.0));
  EXPECT_EQ(BilevelPart(*report).smoothness_source, SmoothnessSource::kExact);
}

// Automatic step sizes are the default (alpha = beta = 0); an automatic
// z-step with a fixed y-step is 1/L_g1, and a step that is set is used.
TEST(F2obo, StepSizesAreAutomaticByDefaultAndAsSetOtherwise) {
  std::mt19937_64 rng(25);
  const Matrix M = testing::WellConditioned(3, 2, 1.0, 1.0, rng);
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  fam.mu = 4.0;
  const StepData step = testing::QuadraticStep(M, RandomVector(3, rng), RandomVector(3, rng));
  auto first_round = [&](double alpha, bool alpha_auto, double beta) {
    SessionConfig config = ConfigFor("f2obo", fam, ConstraintSet::None());
    config.options.alpha = alpha;
    config.options.alpha_auto = alpha_auto;
    config.options.beta = beta;
    auto session = *Session::Create(config);
    return BilevelPart(*session->Step(step));
  };
  const BilevelReport d = first_round(0.0, false, 0.0);
  EXPECT_TRUE(d.step_sizes_auto);
  EXPECT_DOUBLE_EQ(d.beta, 1.0 / 41.0);
  EXPECT_DOUBLE_EQ(d.alpha, 5.0 / 41.0);
  const BilevelReport fixed_beta = first_round(0.0, false, 0.5);
  EXPECT_DOUBLE_EQ(fixed_beta.alpha, 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(fixed_beta.beta, 0.5 / 5.0);
  const BilevelReport forced = first_round(0.05, true, 0.5);
  EXPECT_DOUBLE_EQ(forced.alpha, 1.0 / 4.0);
  const BilevelReport set = first_round(0.05, false, 0.5);
  EXPECT_FALSE(set.step_sizes_auto);
  EXPECT_DOUBLE_EQ(set.alpha, 0.05);
  EXPECT_DOUBLE_EQ(set.beta, 0.1);
}

TEST(F2obo, AutoStepSizesOnSoftmaxFamiliesComeFromRowNormBounds) {
  std::mt19937_64 rng(24);
  FamilyConfig fam;
  fam.name = "logistic_hpo";
  fam.features = 6;
  fam.classes = 3;
  SessionConfig config = ConfigFor("f2obo", fam, ConstraintSet::Box(0.0, 0.1));
  config.options.alpha_auto = config.options.beta_auto = true;
  auto session = *Session::Create(config);
  const StepData step{testing::ClassificationBatch(16, 6, 3, false, rng),
                      testing::ClassificationBatch(16, 6, 3, false, rng)};
  const auto report = session->Step(step);
  ASSERT_TRUE(report.ok());
  const BilevelReport& r = BilevelPart(*report);
  EXPECT_EQ(r.smoothness_source, SmoothnessSource::kBatchBound);
  EXPECT_GT(r.l_g1, 0.0);
  EXPECT_DOUBLE_EQ(r.beta, 1.0 / (2.0 * r.lambda * r.l_g1 + r.l_f1));
  EXPECT_DOUBLE_EQ(r.alpha, r.lambda * r.beta);
}

TEST(F2obo, LambdaFollowsThePapersScheduleAndItsCapByOption) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = fam.y_dim = 1;
  SessionConfig config = ConfigFor("f2obo", fam, ConstraintSet::None());
  config.options.lambda_schedule = LambdaSchedule::kPaper;
  config.options.tau = 0.5;
  config.options.lambda_max = 12.0;
  auto session = *Session::Create(config);
  const StepData step =
      testing::QuadraticStep(Matrix::Ones(1, 1), Vector::Zero(1), Vector::Ones(1));
  for (int t = 1; t <= 6; ++t) {
    // lambda_t = lambda_1 t^tau, capped.
    EXPECT_NEAR(BilevelView(session->state()).lambda, std::min(12.0, 5.0 * std::sqrt(t)), 1e-12);
    ASSERT_TRUE(session->Step(step).ok());
  }
}

// rho = max(||grad_y L||, lambda ||grad_y g(z)||) / ||grad_y f||: the factor
// (1 + 1/t)^tau applies while rho <= 1/2, (1 + 1/t)^(tau/2) otherwise (also
// with an error and no signal, or a non-finite one); lambda_schedule = paper
// applies the full factor always.
TEST(F2obo, FollowedLambdaGrowsFullyWhileTheInnerErrorIsAtMostHalfTheSignalElseAtHalfTheRate) {
  AlgorithmOptions o;
  EXPECT_EQ(o.lambda_schedule, LambdaSchedule::kFollow) << "the default";
  o.tau = 1.0;
  const double full = 5.0 * 1.25, floor = 5.0 * std::sqrt(1.25);
  BilevelReport r;
  r.grad_y_f = 2.0;
  r.residual_y = 1.0;  // rho = 1 / 2
  r.residual_z = 0.1;  // lambda residual_z = 0.5: rho 1/4
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), full);
  r.residual_y = std::nextafter(1.0, 2.0);
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), floor);
  r.residual_y = 0.0;
  r.residual_z = 0.2001;  // lambda residual_z = 1.0005: rho > 1/2
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), floor);
  r.residual_z = 0.01;
  r.grad_y_f = 0.0;  // an error and no signal
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), floor);
  r.grad_y_f = std::numeric_limits<double>::quiet_NaN();
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), floor);
  o.lambda_schedule = LambdaSchedule::kPaper;
  EXPECT_DOUBLE_EQ(NextLambdaFollowing(o, 4, 5.0, r), full);
  EXPECT_EQ(NextLambdaFollowing(o, 4, 5.0, r), NextLambda(o, 4, 5.0));
  o.lambda_schedule = LambdaSchedule::kFollow;
  o.tau = 0.0;
  EXPECT_EQ(NextLambdaFollowing(o, 4, 5.0, r), 5.0) << "tau = 0: constant either way";
  o.tau = 1.0;
  r.grad_y_f = 1.0;
  o.lambda_max = 5.5;
  EXPECT_EQ(NextLambdaFollowing(o, 4, 5.0, r), 5.5) << "the cap still applies";
}

// On a static stream the loops converge and the followed lambda grows with
// the paper's; on a stream whose g_t moves every step (fresh rows) the
// z-loop's residual stays at the batch-to-batch change of g_t and lambda
// grows at the floor's rate, lambda_1 t^(tau/2), where the paper's reaches
// lambda_1 t.
TEST(F2obo, FollowedLambdaGrowsLikeThePapersOnAStaticStreamAndAtTheFloorOnAMovingOne) {
  std::mt19937_64 rng(21);
  const int d1 = 3, d2 = 6;
  const Matrix M = testing::WellConditioned(d2, d1, 0.7, 1.3, rng);
  const Vector c = RandomVector(d2, rng), d = RandomVector(d2, rng);
  FamilyConfig quad;
  quad.name = "quadratic";
  quad.x_dim = d1;
  quad.y_dim = d2;
  quad.mu = 2.0;
  SessionConfig config = ConfigFor("f2obo", quad, ConstraintSet::None());
  config.options.inner_steps = 20;
  ASSERT_EQ(config.options.lambda_schedule, LambdaSchedule::kFollow);
  auto fixed_stream = *Session::Create(config);
  const StepData step = testing::QuadraticStep(M, c, d);
  for (int t = 1; t <= 200; ++t) ASSERT_TRUE(fixed_stream->Step(step).ok());
  EXPECT_GT(BilevelView(fixed_stream->state()).lambda, 500.0)
      << "lambda_1 = 5, paper: 1,005; floor: 71";

  FamilyConfig ridge;
  ridge.name = "ridge_hpo";
  ridge.features = 5;
  ridge.mu0 = 0.1;
  SessionConfig moving = ConfigFor("f2obo", ridge, ConstraintSet::Box(0.0, 1.0));
  SessionConfig paper = moving;
  paper.options.lambda_schedule = LambdaSchedule::kPaper;
  auto followed = *Session::Create(moving);
  auto grown = *Session::Create(paper);
  const Vector w = RandomVector(5, rng);
  for (int t = 1; t <= 200; ++t) {
    StepData fresh;
    fresh.inner = testing::RegressionBatch(16, w, 1.0, false, rng);
    fresh.upper = testing::RegressionBatch(16, w, 1.0, false, rng);
    ASSERT_TRUE(followed->Step(fresh).ok());
    ASSERT_TRUE(grown->Step(fresh).ok());
  }
  EXPECT_NEAR(BilevelView(grown->state()).lambda, 5.0 * 201, 1e-9);
  const double floor = 5.0 * std::sqrt(201.0);  // 70.9
  EXPECT_GE(BilevelView(followed->state()).lambda, floor * (1 - 1e-12));
  EXPECT_LT(BilevelView(followed->state()).lambda, 2.0 * floor);
}

TEST(F2oboSingleLoop, DefaultsToOneInnerStepAndRejectsMore) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = fam.y_dim = 1;
  SessionConfig config = ConfigFor("f2obo_sl", fam, ConstraintSet::None());
  EXPECT_EQ(config.options.inner_steps, 1);
  EXPECT_DOUBLE_EQ(config.options.tau, 1.0 / 3.0);
  auto session = *Session::Create(config);
  const auto report =
      session->Step(testing::QuadraticStep(Matrix::Ones(1, 1), Vector::Zero(1), Vector::Ones(1)));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(BilevelPart(*report).y_iterations, 1);
  config.options.inner_steps = 2;
  const auto bad = Session::Create(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("options.inner_steps"), std::string::npos);
}

}  // namespace
}  // namespace f2obo
