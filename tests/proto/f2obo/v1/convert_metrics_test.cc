// The exact metrics on the wire: every convergence flag and the running
// sums' unconverged counts survive ToProto (proto/f2obo/v1/convert.cc).
#include <gtest/gtest.h>

#include "core/bilevel/bilevel_state.h"
#include "f2obo/v1/convert.h"

namespace f2obo {
namespace {

TEST(ConvertMetrics, ExactMetricsCarryEveryConvergenceFlag) {
  ExactMetrics m;
  m.inner_converged = true;
  m.cg_converged = false;
  v1::ExactMetrics out;
  ToProto(m, RunningMetrics{}, &out);
  EXPECT_TRUE(out.bilevel().inner_converged());
  EXPECT_FALSE(out.bilevel().cg_converged());
  EXPECT_FALSE(out.bilevel().has_previous_inner_converged());  // no variation, no drift

  m.variation = 0.5;
  m.drift = 0.25;
  for (bool previous : {false, true}) {
    m.previous_inner_converged = previous;
    v1::ExactMetrics wire;
    ToProto(m, RunningMetrics{}, &wire);
    ASSERT_TRUE(wire.bilevel().has_previous_inner_converged());
    EXPECT_EQ(wire.bilevel().previous_inner_converged(), previous);
  }
}

TEST(ConvertMetrics, RunningMetricsCarryTheUnconvergedCounts) {
  RunningMetrics r;
  r.evaluated_steps = 10;
  r.sums.resize(kBilevelSumCount, 0.0);
  r.sums[kBlreg] = 2.5;
  r.sums[kDriftSteps] = 9;
  r.sums[kUnconvergedSteps] = 3;
  r.sums[kUnconvergedDriftSteps] = 4;
  v1::RunningMetrics out;
  ToProto(ProblemClass::kBilevel, r, &out);
  EXPECT_EQ(out.evaluated_steps(), 10);
  EXPECT_EQ(out.bilevel().blreg(), 2.5);
  EXPECT_EQ(out.bilevel().drift_steps(), 9);
  EXPECT_EQ(out.bilevel().unconverged_steps(), 3);
  EXPECT_EQ(out.bilevel().unconverged_drift_steps(), 4);
}

}  // namespace
}  // namespace f2obo
