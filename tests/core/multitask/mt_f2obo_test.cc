// mt_f2obo (core/multitask/mt_f2obo.cc, our first-order multi-task round):
// with one task it is f2obo up to the rounding of its running sums; its
// direction is the documented weighted average of the touched tasks'
// latest estimates; it drives ||grad F|| down on a static quadratic
// multi-task stream.
#include "core/multitask/mt_f2obo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/bilevel/bilevel_state.h"
#include "core/multitask/multitask_problem.h"
#include "core/multitask/multitask_state.h"
#include "core/session.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

TEST(MtF2obo, WithOneTaskIsF2oboUpToRounding) {
  const testing::QuadraticTasks q(1, 3, 4, 41);
  FamilyConfig single = q.BilevelFamily();
  single.name = "quadratic";
  single.tasks = 0;
  SessionConfig single_config = testing::ConfigFor("f2obo", single, ConstraintSet::Box(-1.0, 1.0));
  const SessionConfig mt_config =
      testing::MultitaskConfig("mt_f2obo", q.BilevelFamily(), ConstraintSet::Box(-1.0, 1.0));
  single_config.options.gamma = mt_config.options.gamma;  // mt_f2obo's fixed step
  std::unique_ptr<Session> f2obo = *Session::Create(single_config);
  std::unique_ptr<Session> mt = *Session::Create(mt_config);
  const TaskTable& table = *MultitaskTable(mt->problem());
  for (int t = 0; t < 40; ++t) {
    ASSERT_TRUE(f2obo->Step(q.Task(0).data).ok());
    ASSERT_TRUE(mt->Step(q.Step({0})).ok());
    const SessionState& a = f2obo->state();
    const SessionState& b = mt->state();
    if (t == 0) {
      EXPECT_EQ(a.x, b.x) << "the first step has no sums to round";
    }
    EXPECT_LT((a.x - b.x).norm(), 1e-13 * (1 + a.x.norm())) << "step " << t + 1;
    EXPECT_LT((table.Var(b, 0, kMtY) - a.vectors[kBilevelY]).norm(),
              1e-13 * (1 + a.vectors[kBilevelY].norm()));
    EXPECT_EQ(b.scalars[kMultitaskLambda], a.scalars[kBilevelLambda]);
    if (HasFailure()) break;
  }
}

TEST(MtF2obo, StepsAlongTheWeightedAverageOfEveryTouchedTasksLatestEstimate) {
  const testing::QuadraticTasks q(4, 2, 3, 43);
  SessionConfig config =
      testing::MultitaskConfig("mt_f2obo", q.BilevelFamily(), ConstraintSet::None());
  config.options.task_momentum = 0.7;
  std::unique_ptr<Session> s = *Session::Create(config);
  const TaskTable& table = *MultitaskTable(s->problem());
  const std::vector<std::vector<int>> schedule = {{0}, {1, 2}, {0}, {3}, {3}, {1}, {2, 0}, {3}};
  for (const std::vector<int>& tasks : schedule) {
    const absl::StatusOr<StepReport> r = s->Step(q.Step(tasks));
    ASSERT_TRUE(r.ok());
    const SessionState& st = s->state();
    const double t = static_cast<double>(st.t - 1);  // the step just applied
    Vector sum = Vector::Zero(q.d1);
    double weight = 0.0;
    for (int slot = 0; slot < table.touched(st); ++slot) {
      const double w = std::pow(0.7, t - table.Var(st, slot, kMtMeta)[0]);
      sum += w * table.Var(st, slot, kMtH);
      weight += w;
    }
    const Vector& direction = std::get<MultitaskReport>(r->detail).direction;
    EXPECT_LT((direction - sum / weight).norm(), 1e-13 * (1 + direction.norm())) << "step " << t;
  }
}

TEST(MtF2obo, DrivesTheGradientOfFBelowToleranceOnAStaticQuadraticStream) {
  const testing::QuadraticTasks q(5, 3, 4, 31);
  SessionConfig config =
      testing::MultitaskConfig("mt_f2obo", q.BilevelFamily(), ConstraintSet::None());
  config.options.gamma = 0.05;
  std::unique_ptr<Session> s = *Session::Create(config);
  const double start = q.GradF(s->state().x).norm();
  std::mt19937_64 rng(8);
  for (int t = 0; t < 6000; ++t) {
    ASSERT_TRUE(s->Step(q.Step({static_cast<int>(rng() % q.m())})).ok()) << t;
  }
  const double end = q.GradF(s->state().x).norm();
  EXPECT_LT(end, 1e-3 * start) << "||grad F(x_1)|| = " << start;
}

}  // namespace
}  // namespace f2obo
