// The pieces IR-SCG and IR-FSCG share, against the paper's formulas written
// out directly.
#include "core/simple/algorithms/ir_common.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.h"

namespace f2obo {
namespace {

// sigma_{i-1} - sigma_i without cancellation agrees with the plain
// difference where that is accurate, and is 0 up to Alg. 2's floor q.
TEST(RegSchedule, DropIsTheDifferenceOfConsecutiveSigmas) {
  for (int64_t floor : {0, 7}) {
    const RegSchedule s{10.0, 0.25, floor};
    for (int64_t i = 1; i < 200; ++i) {
      EXPECT_NEAR(s.Drop(i), s.Sigma(i - 1) - s.Sigma(i), 1e-13) << i;
      if (i <= floor) {
        EXPECT_EQ(s.Drop(i), 0.0);
      }
    }
    EXPECT_EQ(s.Sigma(0), floor == 0 ? 10.0 : 10.0 * std::pow(8.0, -0.25));
  }
  // Far out the plain difference has lost most digits; Drop has not:
  // sigma_{i-1} - sigma_i ~ p varsigma i^(-p-1).
  const RegSchedule s{10.0, 0.25, 0};
  const double i = 1e12;
  EXPECT_NEAR(s.Drop(static_cast<int64_t>(i)) / (0.25 * 10.0 * std::pow(i, -1.25)), 1.0, 1e-9);
}

// z_{k+1} of Alg. 1 / 2: [(k+2)(k+1) sigma_{k+1} x_{k+1} + sum_{i<=k+1} w_i x_i] / S_{k+1},
// w_i = (i+1) i (sigma_{i-1} - sigma_i), summed naively over random iterates.
TEST(UpdateAverage, MatchesTheExplicitWeightedSumOfTheAlgorithms) {
  for (int64_t floor : {0, 5}) {
    const RegSchedule s{10.0, 0.5, floor};
    Rng rng(3);
    std::vector<Vector> xs;
    Vector mean = Vector::Zero(3), decision(3);
    double weight = 0.0;
    for (int64_t k = 0; k < 60; ++k) {
      Vector x(3);
      for (int j = 0; j < 3; ++j) x[j] = static_cast<double>(rng.UniformBelow(1000)) / 100.0;
      xs.push_back(x);  // xs[k] = x_{k+1}
      UpdateAverage(s, k, x, &mean, &weight, &decision);
      double total = (k + 2.0) * (k + 1.0) * s.Sigma(k + 1);
      Vector sum = total * x;
      for (int64_t i = 1; i <= k + 1; ++i) {
        const double w = (i + 1.0) * i * (s.Sigma(i - 1) - s.Sigma(i));
        total += w;
        sum += w * xs[i - 1];
      }
      const Vector expected = sum / total;
      EXPECT_LT((decision - expected).cwiseAbs().maxCoeff(), 1e-12) << "k = " << k;
    }
  }
}

// One conditional-gradient step: s = LMO(sigma d_f + d_g) on the l1 ball,
// x moves alpha of the way there, the gap is <c, x - s>.
TEST(ConditionalGradientStep, MovesTowardsTheLmoVertex) {
  const ConstraintSet z = ConstraintSet::L1Ball(2.0);
  Vector d_f(3), d_g(3), c(3), s(3), x(3);
  d_f << 1.0, -4.0, 0.5;
  d_g << 0.5, 1.0, 3.0;
  x << 0.2, 0.1, -0.3;
  double seconds = 0.0;
  // c = 0.5 d_f + d_g = (1, -1, 3.25): the vertex is -2 e_3.
  const double gap = ConditionalGradientStep(z, 0.5, 0.25, d_f, d_g, &c, &s, &x, &seconds);
  EXPECT_EQ(s, (Vector(3) << 0.0, 0.0, -2.0).finished());
  EXPECT_DOUBLE_EQ(gap, 1.0 * 0.2 - 1.0 * 0.1 + 3.25 * (-0.3 + 2.0));
  EXPECT_TRUE(x.isApprox((Vector(3) << 0.15, 0.075, -0.725).finished(), 1e-15));
  EXPECT_GE(seconds, 0.0);
}

bool BitEqual(const Vector& a, const Vector& b) {
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

// StepAndAverage is ConditionalGradientStep then UpdateAverage in fewer
// passes: the same numbers, bit for bit, on every set with an LMO, with
// the weight flat (Alg. 2's floor) and growing, odd sizes (vector tails).
TEST(StepAndAverage, BitEqualToConditionalGradientStepThenUpdateAverage) {
  Rng rng(5);
  const auto random = [&](int d, double scale) {
    Vector v(d);
    for (int j = 0; j < d; ++j) {
      v[j] = scale * (static_cast<double>(rng.UniformBelow(1 << 30)) / (1 << 29) - 1.0);
    }
    return v;
  };
  for (int d : {1, 7, 37, 1000}) {
    const ConstraintSet sets[] = {ConstraintSet::L1Ball(2.0), ConstraintSet::Ball(1.5),
                                  ConstraintSet::Simplex(1.0), ConstraintSet::Box(-0.5, 0.5)};
    for (const ConstraintSet& z : sets) {
      for (int64_t floor : {0, 5}) {
        const RegSchedule schedule{10.0, 0.25, floor};
        for (int64_t k : {0, 1, 3, 9, 250}) {
          const Vector d_f = random(d, 3.0), d_g = random(d, 1.0), x0 = random(d, 0.4);
          const Vector mean0 = random(d, 0.4);
          const double alpha = 2.0 / (k + 2.0), weight0 = 17.0 * k;
          Vector c(d), s(d), x = x0, mean = mean0, decision(d);
          double weight = weight0, seconds = 0.0;
          const double gap =
              ConditionalGradientStep(z, schedule.Sigma(k), alpha, d_f, d_g, &c, &s, &x, &seconds);
          UpdateAverage(schedule, k, x, &mean, &weight, &decision);

          Vector c2(d), s2(d), x2 = x0, prev(3), mean2(2), decision2;
          double weight2 = weight0;
          AveragedStep step;
          step.x = &x2;
          step.prev = &prev;
          step.mean_before = &mean0;
          step.mean_after = &mean2;
          step.weight = &weight2;
          step.decision = &decision2;
          const double gap2 =
              StepAndAverage(z, schedule, k, alpha, d_f, d_g, &c2, &s2, step, &seconds);
          const std::string where = "d " + std::to_string(d) + " kind " +
                                    std::to_string(static_cast<int>(z.kind)) + " floor " +
                                    std::to_string(floor) + " k " + std::to_string(k);
          EXPECT_EQ(std::memcmp(&gap, &gap2, 8), 0) << where;
          EXPECT_TRUE(BitEqual(x, x2)) << where;
          EXPECT_TRUE(BitEqual(prev, x0)) << where;
          EXPECT_TRUE(BitEqual(decision, decision2)) << where;
          EXPECT_EQ(std::memcmp(&weight, &weight2, 8), 0) << where;
          EXPECT_EQ(AverageIncrement(schedule, k) > 0.0, k + 1 > floor) << where;
          if (k + 1 > floor) {
            EXPECT_TRUE(BitEqual(mean, mean2)) << where;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace f2obo
