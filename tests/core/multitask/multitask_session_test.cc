// Multi-task sessions (core/multitask/): per-task state only for the tasks
// touched, one sampled task per step costs O(1) family calls whatever m,
// checkpoints resume bit-identically, bad input is refused naming the field
// with the state unchanged, and the exact metrics are grad F over the tasks
// seen.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/multitask/multitask_family.h"
#include "core/multitask/multitask_metrics_evaluator.h"
#include "core/multitask/multitask_problem.h"
#include "core/multitask/multitask_state.h"
#include "core/session.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// Counts every oracle call, and which tasks were asked for.
class CountingFamily final : public BilevelFamily {
 public:
  BilevelFamily* base = nullptr;
  int64_t calls = 0;
  std::string_view name() const override { return base->name(); }
  int x_dim() const override { return base->x_dim(); }
  int y_dim() const override { return base->y_dim(); }
  bool is_classification() const override { return base->is_classification(); }
  absl::Status ValidateBatch(const Batch& b, BatchRole r) const override {
    return base->ValidateBatch(b, r);
  }
  void Prepare(const StepData& d) override { base->Prepare(d); }
  double F(const VecIn& x, const VecIn& y, const BatchView& u, Vector* gx, Vector* gy) override {
    ++calls;
    return base->F(x, y, u, gx, gy);
  }
  double G(const VecIn& x, const VecIn& y, const BatchView& i, Vector* gx, Vector* gy) override {
    ++calls;
    return base->G(x, y, i, gx, gy);
  }
  void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& i, Vector* g1,
                  Vector* g2) override {
    ++calls;
    base->GradYGPair(x, y1, y2, i, g1, g2);
  }
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& i, const VecIn& v,
              Vector* out) override {
    ++calls;
    base->HvpYYG(x, y, i, v, out);
  }
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& i, const VecIn& v,
              Vector* out) override {
    ++calls;
    base->HvpXYG(x, y, i, v, out);
  }
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& u, const VecIn& v,
              Vector* out) override {
    ++calls;
    base->HvpYYF(x, y, u, v, out);
  }
};

class CountingTasks final : public MultitaskFamily {
 public:
  explicit CountingTasks(std::unique_ptr<MultitaskFamily> base) : base_(std::move(base)) {}
  std::set<int> asked;  // tasks whose oracle was asked for
  int64_t calls() const { return counting_.calls; }
  std::string_view name() const override { return base_->name(); }
  int tasks() const override { return base_->tasks(); }
  int x_dim() const override { return base_->x_dim(); }
  int y_dim() const override { return base_->y_dim(); }
  bool is_classification() const override { return base_->is_classification(); }
  absl::Status ValidateBatch(int task, const Batch& b, BatchRole r) const override {
    return base_->ValidateBatch(task, b, r);
  }
  absl::Status ValidateConstraint(const ConstraintSet& s) const override {
    return base_->ValidateConstraint(s);
  }
  void DefaultX(Vector* x) const override { base_->DefaultX(x); }
  BilevelFamily& Task(int task, const StepData& data) override {
    asked.insert(task);
    counting_.base = &base_->Task(task, data);
    return counting_;
  }

 private:
  std::unique_ptr<MultitaskFamily> base_;
  CountingFamily counting_;
};

// BilevelFamily calls and tasks asked for, per step, of `algorithm` on m tasks
// when every step carries one task (from a fixed sequence in [0, 8)).
std::vector<std::pair<int64_t, std::set<int>>> CostPerStep(const std::string& algorithm, int m) {
  constexpr int kFeatures = 3, kClasses = 2;
  SessionConfig config = testing::MultitaskConfig(
      algorithm, testing::LogisticTasksFamily(m, kFeatures, kClasses), ConstraintSet::Box(0, 0.1));
  config.options.sample_rows = 8;
  // Fixed steps: an automatic one (the default) is estimated by power
  // iterations whose number depends on the iterate, which depends on m.
  config.options.alpha = config.options.beta = 0.1;
  auto counting = std::make_unique<CountingTasks>(*CreateMultitaskFamily(config.family));
  CountingTasks* c = counting.get();
  std::unique_ptr<Problem> p = *CreateMultitaskProblem(config, std::move(counting));
  SessionState s;
  EXPECT_TRUE(p->InitState(config, &s).ok());
  s.rng = Rng(5);
  std::mt19937_64 rng(12);
  std::vector<std::pair<int64_t, std::set<int>>> out;
  for (int t = 1; t <= 30; ++t) {
    const StepData data =
        testing::LogisticTasksStep({static_cast<int>((t * 5) % 8)}, kFeatures, kClasses, 20, rng);
    EXPECT_TRUE(p->ValidateData(data).ok());
    const int64_t before = c->calls();
    c->asked.clear();
    StepReport report;
    EXPECT_TRUE(p->Round(data, &s, &report, /*control=*/nullptr).ok()) << t;
    s.t = t + 1;
    out.emplace_back(c->calls() - before, c->asked);
  }
  return out;
}

TEST(MultitaskSession, OneSampledTaskPerStepCostsTheSameFamilyCallsWhateverM) {
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    const auto small = CostPerStep(algorithm, 8);
    const auto huge = CostPerStep(algorithm, 10000);
    for (size_t t = 0; t < small.size(); ++t) {
      EXPECT_EQ(small[t].first, huge[t].first) << algorithm << " step " << t + 1;
      // Only the sampled task's oracle is asked for (rsvrb's j_t is
      // evaluated from stored estimators, without data).
      EXPECT_EQ(huge[t].second, std::set<int>{static_cast<int>(((t + 1) * 5) % 8)})
          << algorithm << " step " << t + 1;
      EXPECT_GT(huge[t].first, 0);
    }
  }
}

TEST(MultitaskSession, HoldsStateOnlyForTheTasksTouched) {
  const testing::QuadraticTasks q(3, 2, 3, 51);
  FamilyConfig family = q.BilevelFamily();
  family.tasks = 100000;
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s =
        *Session::Create(testing::MultitaskConfig(algorithm, family, ConstraintSet::None()));
    const TaskTable& table = *MultitaskTable(s->problem());
    const size_t empty = s->state().aux.size();
    // The head, the globals and one (empty, unallocated) index page per 64
    // tasks of m.
    EXPECT_EQ(empty, 1u + table.global_count() + (100000 + 63) / 64);
    EXPECT_EQ(
        s->state().aux.payload_bytes(), 2 * sizeof(double) + [&] {
          size_t b = 0;
          for (int g = 0; g < table.global_count(); ++g) b += s->state().aux[1 + g].size();
          return b * sizeof(double);
        }());
    // Tasks 70000, 5 and 99999 carry the data of quadratic tasks 0-2.
    const std::vector<int> ids = {70000, 5, 99999, 5};
    for (size_t k = 0; k < ids.size(); ++k) {
      TaskData task = q.Task(static_cast<int>(k % 3));
      task.task = ids[k];
      StepData step;
      step.tasks.push_back(task);
      ASSERT_TRUE(s->Step(step).ok());
    }
    const SessionState& st = s->state();
    EXPECT_EQ(table.touched(st), 3);
    EXPECT_EQ(st.aux.size(), empty + 3) << algorithm << ": one part per touched task";
    EXPECT_EQ(st.aux[0], (Vector(2) << -2, 3).finished()) << "the layout's mark, 3 touched";
    // Slots in the order the tasks were first touched.
    EXPECT_EQ(table.Find(st, 70000), 0);
    EXPECT_EQ(table.Find(st, 5), 1);
    EXPECT_EQ(table.Find(st, 99999), 2);
    EXPECT_EQ(table.Find(st, 6), -1);
    EXPECT_EQ(table.task_at(st, 2), 99999);
  }
}

TEST(MultitaskSession, CheckpointRoundTripResumesBitIdentically) {
  constexpr int kFeatures = 3, kClasses = 2;
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    SessionConfig config = testing::MultitaskConfig(
        algorithm, testing::LogisticTasksFamily(50, kFeatures, kClasses, 11.0),
        ConstraintSet::Box(0, 0.1));
    config.seed = 3;
    config.options.sample_rows = 8;
    std::unique_ptr<Session> first = *Session::Create(config);
    std::mt19937_64 rng(14);
    std::vector<StepData> stream;
    for (int t = 0; t < 30; ++t) {
      const int a = static_cast<int>(rng() % 50);
      const int b = static_cast<int>((a + 1 + rng() % 49) % 50);  // two distinct tasks
      stream.push_back(testing::LogisticTasksStep({a, b}, kFeatures, kClasses, 16, rng));
    }
    for (int t = 0; t < 15; ++t) ASSERT_TRUE(first->Step(stream[t]).ok());
    absl::StatusOr<Checkpoint> ckpt = DeserializeCheckpoint(first->Encode(first->state()));
    ASSERT_TRUE(ckpt.ok());
    absl::StatusOr<std::unique_ptr<Session>> second = Session::Restore(config, *ckpt);
    ASSERT_TRUE(second.ok()) << second.status();
    for (int t = 15; t < 30; ++t) {
      ASSERT_TRUE(first->Step(stream[t]).ok());
      ASSERT_TRUE((*second)->Step(stream[t]).ok());
      EXPECT_TRUE(first->state().BitEquals((*second)->state())) << algorithm << " step " << t + 1;
    }
  }
}

// Applies `bad` and checks the error starts with `field` and nothing changed.
void ExpectRefusedUnchanged(Session& s, const StepData& bad, const std::string& field) {
  const SessionState before = s.state();
  const absl::StatusOr<StepReport> r = s.Step(bad);
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), StartsWith(field));
  EXPECT_TRUE(s.state().BitEquals(before)) << field;
}

TEST(MultitaskSession, RefusesBadInputNamingTheFieldAndChangesNothing) {
  constexpr int kFeatures = 3, kClasses = 2;
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s = *Session::Create(
        testing::MultitaskConfig(algorithm, testing::LogisticTasksFamily(10, kFeatures, kClasses),
                                 ConstraintSet::Box(0, 0.1)));
    std::mt19937_64 rng(15);
    ASSERT_TRUE(s->Step(testing::LogisticTasksStep({2, 7}, kFeatures, kClasses, 12, rng)).ok());

    StepData out_of_range = testing::LogisticTasksStep({3, 10}, kFeatures, kClasses, 12, rng);
    ExpectRefusedUnchanged(*s, out_of_range, "tasks[1].task: 10 is outside [0, m = 10)");
    out_of_range.tasks[1].task = -1;
    ExpectRefusedUnchanged(*s, out_of_range, "tasks[1].task: -1");

    StepData wide = testing::LogisticTasksStep({3, 4}, kFeatures, kClasses, 12, rng);
    wide.tasks[1].data.inner =
        testing::ClassificationBatch(12, kFeatures + 1, kClasses, false, rng);
    ExpectRefusedUnchanged(*s, wide, "tasks[1].inner (task 4): inner batch");

    StepData twice = testing::LogisticTasksStep({6, 1, 6}, kFeatures, kClasses, 12, rng);
    ExpectRefusedUnchanged(*s, twice, "tasks: task 6 appears more than once");

    ExpectRefusedUnchanged(*s, StepData{}, "tasks: a multitask_bilevel step carries");

    StepData top = testing::LogisticTasksStep({3}, kFeatures, kClasses, 12, rng);
    top.upper = top.tasks[0].data.upper;
    ExpectRefusedUnchanged(*s, top, "upper: a multitask_bilevel step carries its batches");

    StepData p = testing::LogisticTasksStep({3}, kFeatures, kClasses, 12, rng);
    p.tasks[0].probability = 1.5;
    ExpectRefusedUnchanged(*s, p, "tasks[0].probability");
    // A probability whose weight 1/p is infinite (or beyond 1e12)
    // is refused before any round, by every algorithm of the class alike.
    p.tasks[0].probability = 5e-324;
    ExpectRefusedUnchanged(*s, p, "tasks[0].probability: 4.94066e-324 is below 1e-12");
    p.tasks[0].probability = 1e-13;
    ExpectRefusedUnchanged(*s, p, "tasks[0].probability: 1e-13 is below 1e-12");
    p.tasks[0].probability = 1e-12;  // the floor itself is accepted
    EXPECT_TRUE(s->Step(p).ok()) << algorithm;
  }
}

TEST(MultitaskSession, SingleTaskClassesRefuseTaggedBatches) {
  const testing::QuadraticTasks q(1, 2, 2, 1);
  FamilyConfig single = q.BilevelFamily();
  single.name = "quadratic";
  std::unique_ptr<Session> s =
      *Session::Create(testing::ConfigFor("f2obo", single, ConstraintSet::None()));
  StepData step = q.Task(0).data;
  step.tasks.push_back(q.Task(0));
  ExpectRefusedUnchanged(*s, step, "tasks: a bilevel session reads the top-level");
}

// A round writes the parts of the tasks it touches (their blocks,
// the globals, and on a first touch the index page and the head), never the
// other touched tasks' parts, which stay shared with the committed state.
TEST(MultitaskSession, ExactMetricsAreTheGradientOfFOverTheTasksSeen) {
  const testing::QuadraticTasks q(6, 3, 4, 61);
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s = *Session::Create(
        testing::MultitaskConfig(algorithm, q.BilevelFamily(), ConstraintSet::None()));
    std::unique_ptr<MetricsEvaluator> eval = *s->problem().NewMetricsEvaluator();
    const std::vector<std::vector<int>> schedule = {{4}, {1, 4}, {2}, {1}};
    std::vector<int> seen;
    double task_regret[kReportedTasks] = {};
    for (const std::vector<int>& tasks : schedule) {
      const SessionState before = s->state();
      const StepData data = q.Step(tasks);
      const absl::StatusOr<StepReport> r = s->Step(data);
      ASSERT_TRUE(r.ok());
      for (int i : tasks) {
        if (std::find(seen.begin(), seen.end(), i) == seen.end()) seen.push_back(i);
      }
      eval->Observe(data);
      const absl::StatusOr<ClassMetrics> m = eval->Evaluate(before, *r, data, nullptr);
      ASSERT_TRUE(m.ok());
      const MultitaskMetrics& mm = std::get<MultitaskMetrics>(*m);
      const Vector truth = q.GradF(before.x, seen);
      EXPECT_EQ(mm.tasks_evaluated, static_cast<int>(seen.size()));
      EXPECT_NEAR(mm.true_gradient_norm, truth.norm(), 1e-9 * (1 + truth.norm()));
      const Vector& direction = std::get<MultitaskReport>(r->detail).direction;
      EXPECT_NEAR(mm.hypergradient_error, (direction - truth).norm(), 1e-9);
      EXPECT_NEAR(mm.regret_term, truth.squaredNorm(), 1e-9 * (1 + truth.squaredNorm()));
      EXPECT_TRUE(mm.Converged());
      // Per-task figures for the seen tasks among 0 .. kReportedTasks - 1
      // only (here 1 and 2, not 4), in increasing order.
      std::vector<int> reported;
      for (const TaskMetrics& tm : mm.tasks) {
        reported.push_back(tm.task);
        const double term = q.GradF(before.x, {tm.task}).squaredNorm();
        EXPECT_NEAR(tm.regret_term, term, 1e-9 * (1 + term)) << "task " << tm.task;
        EXPECT_TRUE(tm.converged);
        task_regret[tm.task] += tm.regret_term;
      }
      std::vector<int> expected;
      for (int i = 0; i < kReportedTasks; ++i) {
        if (std::find(seen.begin(), seen.end(), i) != seen.end()) expected.push_back(i);
      }
      EXPECT_EQ(reported, expected);
      s->AddMetrics(*m);
    }
    EXPECT_EQ(s->metrics().evaluated_steps, 4);
    EXPECT_GT(s->metrics().sums[kMultitaskBlreg], 0.0);
    EXPECT_EQ(s->metrics().sums[kMultitaskUnconvergedSteps], 0.0);
    ASSERT_EQ(s->metrics().sums.size(), static_cast<size_t>(kMultitaskSumCount));
    for (int i = 0; i < kReportedTasks; ++i) {
      EXPECT_EQ(s->metrics().sums[kMultitaskTaskRegret + i], task_regret[i]) << "task " << i;
    }
    EXPECT_GT(task_regret[1], 0.0);
  }
}

TEST(MultitaskSession, MetricsKeepTheMostRecentlySeenTasksOnly) {
  const testing::QuadraticTasks q(2, 2, 2, 62);
  FamilyConfig family = q.BilevelFamily();
  family.tasks = 1000;
  std::unique_ptr<Session> s =
      *Session::Create(testing::MultitaskConfig("mt_f2obo", family, ConstraintSet::None()));
  std::unique_ptr<MetricsEvaluator> eval = *s->problem().NewMetricsEvaluator();
  StepData last;
  absl::StatusOr<StepReport> r;
  SessionState before;
  // Tasks 0, 1, ... each once: the first 40 with quadratic task 1's data,
  // the rest with task 0's.
  for (int i = 0; i < kMaxMetricsTasks + 40; ++i) {
    TaskData task = q.Task(i < 40 ? 1 : 0);
    task.task = i;
    last = StepData{};
    last.tasks.push_back(task);
    before = s->state();
    r = s->Step(last);
    ASSERT_TRUE(r.ok());
    eval->Observe(last);
  }
  const absl::StatusOr<ClassMetrics> m = eval->Evaluate(before, *r, last, nullptr);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::get<MultitaskMetrics>(*m).tasks_evaluated, kMaxMetricsTasks);
  // The kept tasks are the most recent ones, all with task 0's data.
  const Vector truth = q.GradF(before.x, {0});
  EXPECT_NEAR(std::get<MultitaskMetrics>(*m).true_gradient_norm, truth.norm(), 1e-9);
}

}  // namespace
}  // namespace f2obo
