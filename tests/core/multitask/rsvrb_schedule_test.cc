// RSVRB's step-size schedule (core/multitask/rsvrb_schedule.h) against
// values computed independently: by hand where s_t is a round number, and
// by numpy in extended precision (np.longdouble) for the skipped-steps loop.
#include "core/multitask/rsvrb_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/options.h"

namespace f2obo {
namespace {

AlgorithmOptions Options(double q, double c0, double momentum, double task_momentum) {
  AlgorithmOptions o;
  o.rsvrb_decay = q;
  o.rsvrb_offset = c0;
  o.momentum = momentum;
  o.task_momentum = task_momentum;
  return o;
}

TEST(RsvrbSchedule, ConstantIsExactlyTheOptions) {
  const RsvrbSchedule s(Options(0.0, 7.0, 0.9, 0.8));
  EXPECT_FALSE(s.decaying());
  for (int64_t t : {1, 2, 57, 1000000}) {
    EXPECT_EQ(s.Step(t), 1.0);
    EXPECT_EQ(s.Keep(t), 0.9);  // bit for bit: no 1 - (1 - 0.9) rounding
    EXPECT_EQ(s.TaskKeep(t), 0.8);
  }
}

// c0 = 7, q = 1/3: s_t = (8 / (7 + t))^(1/3) is 1 at t = 1, 1/2 at t = 57,
// 1/10 at t = 7993; b_t = (1 - momentum) s_t^2.
TEST(RsvrbSchedule, StepsAndKeepsFollowTheClosedForm) {
  const RsvrbSchedule s(Options(1.0 / 3.0, 7.0, 0.9, 0.8));
  EXPECT_TRUE(s.decaying());
  EXPECT_EQ(s.Step(1), 1.0);
  EXPECT_NEAR(s.Keep(1), 0.9, 1e-15);
  EXPECT_NEAR(s.Step(57), 0.5, 1e-15);
  EXPECT_NEAR(s.Keep(57), 1.0 - 0.1 * 0.25, 1e-15);
  EXPECT_NEAR(s.TaskKeep(57), 1.0 - 0.2 * 0.25, 1e-15);
  EXPECT_NEAR(s.Step(7993), 0.1, 1e-15);
  EXPECT_NEAR(s.Keep(7993), 1.0 - 0.1 * 0.01, 1e-15);
  // q = 1/2, c0 = 0: s_t = t^-1/2, so b_t = b_1 / t (RE-RSVRB's envelope).
  const RsvrbSchedule half(Options(0.5, 0.0, 0.5, 0.5));
  EXPECT_NEAR(half.Step(4), 0.5, 1e-15);
  EXPECT_NEAR(half.Keep(10), 1.0 - 0.5 / 10, 1e-15);
  // Monotone: steps shrink, keeps grow towards 1.
  for (int64_t t = 1; t < 200; ++t) {
    EXPECT_LT(s.Step(t + 1), s.Step(t));
    EXPECT_GT(s.Keep(t + 1), s.Keep(t));
    EXPECT_LT(s.Keep(t), 1.0);
  }
}

// numpy, extended precision:
//   j = np.arange(5, 41, dtype=np.longdouble)
//   s = ((7 + 1) / (7 + j)) ** (1/3); keep = 1 - 0.1 s^2; c = np.cumprod(keep)
//   c[-1], (s c).sum(), (s c)[:-1].sum()
TEST(RsvrbSchedule, SkippedStepsMatchNumpy) {
  const RsvrbSchedule s(Options(1.0 / 3.0, 7.0, 0.9, 0.8));
  const RsvrbSchedule::Decay d = s.Skipped(5, 40);
  EXPECT_NEAR(d.keep, 0.18663162859445923, 1e-15);
  EXPECT_NEAR(d.y_weight, 10.602350930478563, 1e-13);
  EXPECT_NEAR(d.y_weight_before_last, 10.49892027217026, 1e-13);
  // No skipped steps: nothing moves.
  const RsvrbSchedule::Decay none = s.Skipped(9, 8);
  EXPECT_EQ(none.keep, 1.0);
  EXPECT_EQ(none.y_weight, 0.0);
  // One: its own keep and step.
  const RsvrbSchedule::Decay one = s.Skipped(57, 57);
  EXPECT_NEAR(one.keep, 0.975, 1e-15);
  EXPECT_NEAR(one.y_weight, 0.5 * 0.975, 1e-15);
  EXPECT_EQ(one.y_weight_before_last, 0.0);
}

// A product that reaches 0 (momentum 0: b_1 = 1) stops the loop; the sums
// are those of the steps before.
TEST(RsvrbSchedule, AZeroProductEndsTheLoop) {
  const RsvrbSchedule s(Options(1.0 / 3.0, 0.0, 0.0, 0.0));
  const RsvrbSchedule::Decay d = s.Skipped(1, int64_t{1} << 60);  // returns at once
  EXPECT_EQ(d.keep, 0.0);
  EXPECT_EQ(d.y_weight, 0.0);
}

}  // namespace
}  // namespace f2obo
