// The upper step shared by the bilevel algorithms
// (core/bilevel/hypergradients/upper_step.h): a gamma set is the projected step of
// before; the automatic step is scale-free in x and X, converges on a
// quadratic bilevel problem from boxes of width 1 and 100 alike, and its
// state survives a checkpoint bit for bit (and is absent from an old one).
#include "core/bilevel/hypergradients/upper_step.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <random>

#include "core/bilevel/hypergradients/first_order.h"
#include "core/session.h"
#include "core/state.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::ConfigFor;
using testing::RandomVector;

TEST(UpperStep, AGammaSetIsTheProjectedStepOfBeforeAndKeepsNoState) {
  AlgorithmOptions o;
  o.gamma = 0.25;
  const ConstraintSet box = ConstraintSet::Box(-1.0, 1.0);
  const UpperStep step(o, box, 3, 0);
  EXPECT_FALSE(step.automatic());
  std::vector<int> sizes;
  step.AppendLayout(&sizes);
  EXPECT_TRUE(sizes.empty());
  Vector x(3), ref(3), d(3);
  x << 0.5, -0.9, 0.0;
  d << 1.0, 2.0, -8.0;
  ref = x;
  ProjectedStep(box, 0.25, d, &ref);
  StateParts aux;
  EXPECT_EQ(step.Step(d, 7, &aux, &x), 0.25);
  EXPECT_EQ(x, ref);
  EXPECT_TRUE(aux.empty());
}

TEST(UpperStep, TheFirstAutomaticStepBetsOnePercentOfEachCoordinatesShareOfTheBox) {
  AlgorithmOptions o;  // gamma = 0: automatic
  ConstraintSet box;
  box.kind = ConstraintSet::Kind::kBox;
  box.lo = Vector::Zero(2);
  box.hi = Vector(2);
  box.hi << 0.1, 10.0;
  const UpperStep step(o, box, 2, 0);
  ASSERT_TRUE(step.automatic());
  Vector x = Vector::Constant(2, 0.05), d(2);
  d << -3.0, 1e-6;  // magnitudes do not matter, signs do
  StateParts aux;
  const double gamma = step.Step(d, 1, &aux, &x);
  // eps = 1e-3 of the width, the first coin -sign(d): the bet is
  // C / max(S + 1, 100) W = eps / 100 in the coin's direction.
  EXPECT_NEAR(x[0], 0.05 + 1e-6, 1e-17);
  EXPECT_NEAR(x[1], 0.05 - 1e-4, 1e-17);
  EXPECT_NEAR(gamma, 1e-4 / 1e-6, 1e-6);
  ASSERT_EQ(aux.size(), 1u);
  ASSERT_EQ(aux[0].size(), 10);
  // [L | W | x_1 | S | C]
  EXPECT_EQ(aux[0][0], 3.0);
  EXPECT_EQ(aux[0][1], 1e-6);
  EXPECT_NEAR(aux[0][2], 1e-4, 1e-20);
  EXPECT_NEAR(aux[0][3], 1e-2, 1e-18);
  EXPECT_EQ(aux[0][4], 0.05);
  EXPECT_EQ(aux[0][6], 1.0);
  EXPECT_EQ(aux[0][8], 1.0);
  EXPECT_EQ(aux[0][9], -1.0);
}

// The KT/COCOB recursion in closed form on a constant gradient g (one
// unbounded coordinate, x_1 = 0, eps = 1e-6): coins c_t = -1, S_t = t, and
// while S_t + 1 <= 100 the bet after step t is C_t / 100 W_t = -t W_t / 100
// with W_t = W_{t-1} (1 + (t - 1) / 100) (the coin times the previous bet),
// so x_{t+1} = -(t / 100) eps prod_{s < t} (1 + s / 100).  On a zero-mean
// sign sequence (+g, -g, ...) the bettor wins nothing: W stays at eps (its
// floor), and x stays within eps / 100 of x_1.
TEST(UpperStep, CoinBettingMatchesItsClosedFormOnConstantAndAlternatingGradients) {
  AlgorithmOptions o;
  const ConstraintSet none = ConstraintSet::None();
  const UpperStep step(o, none, 1, 0);
  Vector x = Vector::Zero(1), d = Vector::Constant(1, 7.0);
  StateParts aux;
  double wealth = 1e-6;
  for (int t = 1; t <= 50; ++t) {
    step.Step(d, t, &aux, &x);
    if (t > 1) wealth *= 1.0 + (t - 1) / 100.0;
    EXPECT_NEAR(x[0], -t / 100.0 * wealth, 1e-12 * wealth) << "step " << t;
  }
  EXPECT_LT(x[0], -0.02) << "geometric growth: 2e4 eps in 50 steps";

  Vector y = Vector::Zero(1);
  StateParts aux2;
  double far = 0.0;
  for (int t = 1; t <= 400; ++t) {
    d[0] = t % 2 == 1 ? 7.0 : -7.0;
    step.Step(d, t, &aux2, &y);
    far = std::max(far, std::abs(y[0]));
  }
  EXPECT_LE(far, 1e-6 / 100.0 + 1e-21);
  EXPECT_EQ(aux2[0][1], 1e-6) << "no wealth from a fair coin";
}

// The reduction to X: a bettor pushed against a bound sits there (x = hi),
// and the gradients that keep pushing out are not bet on, so the first
// gradient pointing back moves x into the box at once.
TEST(UpperStep, AtABoundTheBettorStopsBettingOutwardAndComesBackAtOnce) {
  AlgorithmOptions o;
  const ConstraintSet box = ConstraintSet::Box(0.0, 1.0);
  const UpperStep step(o, box, 1, 0);
  Vector x = Vector::Constant(1, 0.9), d = Vector::Constant(1, -1.0);
  StateParts aux;
  int t = 1;
  for (; t <= 400 && x[0] < 1.0; ++t) step.Step(d, t, &aux, &x);
  ASSERT_EQ(x[0], 1.0) << "reached the bound";
  const Vector at_bound = aux[0];
  for (int k = 0; k < 50; ++k, ++t) step.Step(d, t, &aux, &x);
  EXPECT_EQ(x[0], 1.0);
  EXPECT_EQ(aux[0][1], at_bound[1]) << "wealth frozen: outward gradients are not bet on";
  d[0] = 1.0;
  step.Step(d, t, &aux, &x);
  EXPECT_LT(x[0], 1.0);
}

// x_i -> c x_i with X scaled alike: every iterate scales by c.  With c a
// power of two every operation scales exactly, so bit for bit.
TEST(UpperStep, AutomaticStepsAreScaleFreeInXAndTheBox) {
  std::mt19937_64 rng(5);
  const int d1 = 4;
  const Vector target = RandomVector(d1, rng).cwiseAbs();
  const Vector curvature = (RandomVector(d1, rng).cwiseAbs().array() + 0.1).matrix();
  const double c = 128.0;
  AlgorithmOptions o;
  const ConstraintSet box = ConstraintSet::Box(-2.0, 3.0);
  const ConstraintSet wide = ConstraintSet::Box(-2.0 * c, 3.0 * c);
  const UpperStep step(o, box, d1, 0), step_wide(o, wide, d1, 0);
  Vector x = Vector::Zero(d1), xw = Vector::Zero(d1);
  StateParts aux, auxw;
  for (int t = 1; t <= 200; ++t) {
    // grad of sum_i k_i (x_i - x*_i)^2 / 2, and of the same in c x.
    const Vector g = (curvature.array() * (x - target).array()).matrix();
    const Vector gw = (curvature.array() * (xw / c - target).array()).matrix() / c;
    step.Step(g, t, &aux, &x);
    step_wide.Step(gw, t, &auxw, &xw);
    ASSERT_EQ(xw, c * x) << "step " << t;
  }
  EXPECT_LT((x - target).norm(), 1e-6);
}

// F(x) = ||M x + c - d||^2 / 2 (the quadratic family with a static stream):
// x* in closed form, a box of width 1 or 100 centred at x* + 0.2, x_1 = x*
// + 0.3.  A fixed gamma that suits one width is useless on the other; the
// automatic step needs no choice and about the same number of steps.
TEST(UpperStep, AutomaticStepConvergesOnAQuadraticFromBoxesOfWidth1And100Alike) {
  std::mt19937_64 rng(21);
  const int d1 = 5, d2 = 8;
  const Matrix M = testing::WellConditioned(d2, d1, 0.7, 1.3, rng);
  const Vector c = RandomVector(d2, rng), d = RandomVector(d2, rng);
  const StepData data = testing::QuadraticStep(M, c, d);
  const Vector x_star = (M.transpose() * M).ldlt().solve(M.transpose() * (d - c));

  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = d1;
  fam.y_dim = d2;
  fam.mu = 2.0;
  int reached[2] = {-1, -1};
  const double widths[2] = {1.0, 100.0};
  for (int k = 0; k < 2; ++k) {
    ConstraintSet box;
    box.kind = ConstraintSet::Kind::kBox;
    box.lo = (x_star.array() + 0.2 - widths[k] / 2).matrix();
    box.hi = (x_star.array() + 0.2 + widths[k] / 2).matrix();
    SessionConfig config = ConfigFor("f2obo", fam, box);
    ASSERT_EQ(config.options.gamma, 0.0) << "automatic by default";
    config.options.inner_steps = 20;
    config.x0 = (x_star.array() + 0.3).matrix();
    auto session = *Session::Create(config);
    for (int t = 1; t <= 2000 && reached[k] < 0; ++t) {
      ASSERT_TRUE(session->Step(data).ok());
      if ((session->state().x - x_star).norm() < 1e-4) reached[k] = t;
    }
    EXPECT_GT(reached[k], 0) << "width " << widths[k]
                             << ": ||x - x*|| = " << (session->state().x - x_star).norm();
  }
  // log2(100) ~ 7 doublings of the wealth more, and a margin.
  EXPECT_LT(reached[1], reached[0] + 40) << reached[0] << " vs " << reached[1];
}

SessionConfig SogdOnRidge() {
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = 3;
  fam.mu0 = 0.1;
  SessionConfig config = ConfigFor("sogd", fam, ConstraintSet::Box(0.0, 1.0));
  config.options.sample_rows = 4;
  return config;
}

StepData RidgeStep(std::mt19937_64& rng) {
  const Vector w = Vector::Ones(3);
  StepData step;
  step.inner = testing::RegressionBatch(8, w, 1.0, false, rng);
  step.upper = testing::RegressionBatch(8, w, 0.1, false, rng);
  return step;
}

// The step's part is the last aux part (after sogd's v and m): restored from
// a checkpoint the run continues bit for bit; a state written before the
// part existed (sogd's own two parts) restores, its part fresh.
TEST(UpperStep, ItsStateResumesBitForBitAndAnOldStateWithoutItStillLoads) {
  const SessionConfig config = SogdOnRidge();
  std::mt19937_64 rng(3);
  std::vector<StepData> steps;
  for (int t = 0; t < 12; ++t) steps.push_back(RidgeStep(rng));
  auto a = *Session::Create(config);
  for (int t = 0; t < 6; ++t) ASSERT_TRUE(a->Step(steps[t]).ok());
  ASSERT_EQ(a->state().aux.size(), 3u);
  EXPECT_EQ(a->state().aux[2].size(), 15);
  absl::StatusOr<Checkpoint> saved = DeserializeCheckpoint(a->Encode(a->state()));
  ASSERT_TRUE(saved.ok()) << saved.status();
  auto b = *Session::Restore(config, *saved);
  for (int t = 6; t < 12; ++t) {
    ASSERT_TRUE(a->Step(steps[t]).ok());
    ASSERT_TRUE(b->Step(steps[t]).ok());
  }
  EXPECT_TRUE(a->state().BitEquals(b->state()));

  Checkpoint old = *saved;
  old.state.aux = StateParts{Vector(old.state.aux[0]), Vector(old.state.aux[1])};
  absl::StatusOr<std::unique_ptr<Session>> c = Session::Restore(config, old);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ((*c)->state().aux.size(), 3u);
  EXPECT_EQ((*c)->state().aux[2].segment(6, 3), saved->state.x) << "x_1 = the restored x";
  EXPECT_TRUE((*c)->Step(steps[6]).ok());

  Checkpoint bad = *saved;
  bad.state.aux[2][0] = -1.0;  // a negative gradient bound
  EXPECT_FALSE(Session::Restore(config, bad).ok());
  bad = *saved;
  bad.state.aux[2][12] = bad.state.aux[2][9] + 1.0;  // |C| > S: a bet beyond the wealth
  EXPECT_FALSE(Session::Restore(config, bad).ok());

  // A state of the distance-over-gradients step of before ([G | r | x_1],
  // 3 x_dim numbers) restores with a fresh part.
  Checkpoint dog = *saved;
  dog.state.aux =
      StateParts{Vector(dog.state.aux[0]), Vector(dog.state.aux[1]), Vector(Vector::Ones(9))};
  absl::StatusOr<std::unique_ptr<Session>> e = Session::Restore(config, dog);
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_EQ((*e)->state().aux[2].size(), 15);
  EXPECT_EQ((*e)->state().aux[2].segment(6, 3), saved->state.x);
}

}  // namespace
}  // namespace f2obo
