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
class CountingFamily final : public Family {
 public:
  Family* base = nullptr;
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
  Family& Task(int task, const StepData& data) override {
    asked.insert(task);
    counting_.base = &base_->Task(task, data);
    return counting_;
  }

 private:
  std::unique_ptr<MultitaskFamily> base_;
  CountingFamily counting_;
};

// Family calls and tasks asked for, per step, of `algorithm` on m tasks
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
  FamilyConfig family = q.Family();
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
    // Issue 25: a probability whose weight 1/p is infinite (or beyond 1e12)
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
  FamilyConfig single = q.Family();
  single.name = "quadratic";
  std::unique_ptr<Session> s =
      *Session::Create(testing::ConfigFor("f2obo", single, ConstraintSet::None()));
  StepData step = q.Task(0).data;
  step.tasks.push_back(q.Task(0));
  ExpectRefusedUnchanged(*s, step, "tasks: a bilevel session reads the top-level");
}

// Issue 23: a round writes the parts of the tasks it touches (their blocks,
// the globals, and on a first touch the index page and the head), never the
// other touched tasks' parts, which stay shared with the committed state.
TEST(MultitaskSession, AStepChangesOnlyThePartsOfItsOwnTasks) {
  const testing::QuadraticTasks q(3, 2, 3, 71);
  FamilyConfig family = q.Family();
  family.tasks = 10000;
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s =
        *Session::Create(testing::MultitaskConfig(algorithm, family, ConstraintSet::None()));
    const TaskTable& table = *MultitaskTable(s->problem());
    const auto step_on = [&](int id) {
      TaskData task = q.Task(id % 3);
      task.task = id;
      StepData step;
      step.tasks.push_back(task);
      return step;
    };
    for (int id = 0; id < 3000; id += 7) ASSERT_TRUE(s->Step(step_on(id)).ok());
    const auto changed = [&] {
      std::set<size_t> out;
      s->pending_state().aux.ForEachChanged(s->state().aux, [&](size_t i) { out.insert(i); });
      return out;
    };
    const auto block_of = [&](int slot) { return std::set<size_t>{table.Index(slot)}; };
    std::set<size_t> allowed;
    for (int g = 0; g < table.global_count(); ++g) allowed.insert(1 + g);

    // A task touched before.
    const int slot = table.Find(s->state(), 2100);
    ASSERT_GE(slot, 0);
    ASSERT_TRUE(s->Prepare(step_on(2100)).ok());
    std::set<size_t> expected = allowed;
    for (size_t i : block_of(slot)) expected.insert(i);
    for (size_t i : changed()) EXPECT_TRUE(expected.count(i)) << algorithm << ": aux[" << i << "]";
    EXPECT_TRUE(changed().count(table.Index(slot))) << algorithm << ": the task's block";
    s->Commit();

    // A first touch: its new block, its index page and the head besides.
    const int fresh = table.touched(s->state());
    ASSERT_TRUE(s->Prepare(step_on(9999)).ok());
    expected = allowed;
    expected.insert(0);
    expected.insert(1 + table.global_count() + 9999 / TaskTable::kPageTasks);
    for (size_t i : block_of(fresh)) expected.insert(i);
    for (size_t i : changed()) EXPECT_TRUE(expected.count(i)) << algorithm << ": aux[" << i << "]";
    EXPECT_EQ(table.Find(s->pending_state(), 9999), fresh);
    s->Abort();
    EXPECT_EQ(table.Find(s->state(), 9999), -1);
  }
}

// A state saved by a server before issue 23 (touched tasks listed in
// increasing order in aux[0], their blocks in that order, no index pages),
// or by one with index pages and a part per vector ({-1, touched} in
// aux[0]), resumes: the same numbers, in this layout.
TEST(MultitaskSession, AStateOfTheEarlierLayoutsResumesWithTheSameNumbers) {
  const testing::QuadraticTasks q(5, 2, 3, 73);
  for (const bool paged : {false, true})
    for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {  // NOLINT(whitespace/braces)
      const SessionConfig config =
          testing::MultitaskConfig(algorithm, q.Family(), ConstraintSet::None());
      std::unique_ptr<Session> a = *Session::Create(config);
      const TaskTable& table = *MultitaskTable(a->problem());
      const std::vector<std::vector<int>> plan = {{3}, {1, 4}, {0}, {3, 1}, {2}, {4}};
      const auto step = [&](const std::vector<int>& ids) {
        StepData d;
        for (int id : ids) d.tasks.push_back(q.Task(id));
        return d;
      };
      for (size_t k = 0; k < 3; ++k) ASSERT_TRUE(a->Step(step(plan[k])).ok());

      // The earlier layout of a's state.
      Checkpoint legacy = *DeserializeCheckpoint(a->Encode(a->state()));
      const SessionState& now = a->state();
      std::vector<int> touched;
      for (int id = 0; id < 5; ++id) {
        if (table.Find(now, id) >= 0) touched.push_back(id);
      }
      StateParts old;
      const size_t pages = table.Index(0) - 1 - table.global_count();
      if (paged) {
        old.push_back((Vector(2) << -1, static_cast<double>(touched.size())).finished());
        for (size_t i = 1; i < table.Index(0); ++i) old.push_back(now.aux[i]);
        for (int slot = 0; slot < table.touched(now); ++slot) {
          for (int b = 0; b < table.block_size(); ++b) old.push_back(table.Var(now, slot, b));
        }
      } else {
        Vector index(static_cast<Eigen::Index>(touched.size()));
        for (size_t k = 0; k < touched.size(); ++k) index[k] = touched[k];
        old.push_back(index);
        for (int g = 0; g < table.global_count(); ++g) old.push_back(now.aux[1 + g]);
        for (int id : touched) {
          for (int b = 0; b < table.block_size(); ++b)
            old.push_back(table.Var(now, table.Find(now, id), b));
        }
      }
      legacy.state.aux = old;

      absl::StatusOr<std::unique_ptr<Session>> b = Session::Restore(config, legacy);
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ((*b)->state().aux.size(), 1 + table.global_count() + pages + touched.size())
          << algorithm
          << (paged ? ": one part per task after the part-per-vector layout"
                    : ": one part per task after the legacy layout");
      for (size_t k = 3; k < plan.size(); ++k) {
        ASSERT_TRUE(a->Step(step(plan[k])).ok());
        ASSERT_TRUE((*b)->Step(step(plan[k])).ok());
      }
      const SessionState& sa = a->state();
      const SessionState& sb = (*b)->state();
      EXPECT_TRUE(sa.x == sb.x) << algorithm;
      EXPECT_TRUE(sa.rng == sb.rng) << algorithm;
      EXPECT_EQ(sa.scalars, sb.scalars) << algorithm;
      EXPECT_EQ(table.touched(sa), table.touched(sb));
      for (int id = 0; id < 5; ++id) {
        const int ka = table.Find(sa, id), kb = table.Find(sb, id);
        ASSERT_EQ(ka < 0, kb < 0) << id;
        if (ka < 0) continue;
        for (int bl = 0; bl < table.block_size(); ++bl) {
          EXPECT_TRUE(table.Var(sa, ka, bl) == table.Var(sb, kb, bl))
              << algorithm << " task " << id << " vector " << bl;
        }
      }
    }
}

// Memory per touched task (issue 23): a task is one aux part, its vectors
// end to end, whatever the algorithm's count of vectors (a part costs ~130
// bytes besides its numbers: 9 parts a task held 3.5-4.7x the task's
// serialized bytes).  Nothing else grows with the tasks but the index
// pages (one part per 64 tasks of m).
TEST(MultitaskSession, ATouchedTaskIsOnePartHoldingItsVectors) {
  const testing::QuadraticTasks q(7, 3, 4, 5);
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s =
        *Session::Create(testing::MultitaskConfig(algorithm, q.Family(), ConstraintSet::None()));
    const TaskTable& table = *MultitaskTable(s->problem());
    const size_t fixed = table.Index(0);
    EXPECT_EQ(s->state().aux.size(), fixed) << algorithm;
    int entries = 0;
    for (int b = 0; b < table.block_size(); ++b) entries += table.vector_size(b);
    EXPECT_GT(table.block_size(), 2) << algorithm;
    for (const std::vector<int>& ids : std::vector<std::vector<int>>{{3}, {1, 4}, {3}, {6, 0}}) {
      ASSERT_TRUE(s->Step(q.Step(ids)).ok());
      const SessionState& st = s->state();
      ASSERT_EQ(st.aux.size(), fixed + table.touched(st)) << algorithm;
      for (int slot = 0; slot < table.touched(st); ++slot) {
        EXPECT_EQ(st.aux[table.Index(slot)].size(), entries) << algorithm << " slot " << slot;
      }
    }
    EXPECT_EQ(table.touched(s->state()), 5) << algorithm;
  }
}

TEST(MultitaskSession, RestoreRefusesAStateWhoseTaskIndexIsNotATask) {
  const testing::QuadraticTasks q(3, 2, 2, 2);
  const SessionConfig config = testing::MultitaskConfig("rsvrb", q.Family(), ConstraintSet::None());
  std::unique_ptr<Session> s = *Session::Create(config);
  ASSERT_TRUE(s->Step(q.Step({1})).ok());
  ASSERT_TRUE(s->Step(q.Step({2})).ok());
  Checkpoint good = *DeserializeCheckpoint(s->Encode(s->state()));
  ASSERT_TRUE(Session::Restore(config, good).ok());

  const TaskTable& table = *MultitaskTable(s->problem());
  const size_t page0 = 1 + table.global_count();  // the index page of tasks 0-63
  Checkpoint bad = good;
  bad.state.aux[page0][3] = 1;  // task 3 of m = 3 named too
  absl::StatusOr<std::unique_ptr<Session>> r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()),
              StartsWith(absl::StrCat("state.aux[", page0, "][3]: 1 is not 0 or 1 + the slot")));
  bad = good;
  bad.state.aux[page0][2] = bad.state.aux[page0][1];  // one slot named twice
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()), StartsWith(absl::StrCat("state.aux[", page0)));
  bad = good;
  bad.state.aux[0][1] = 1;  // the head's count disagrees
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("state.aux[0]: expected {-2, 2}"));
  bad = good;
  bad.state.aux.pop_back();  // a task's block missing
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("state.aux[0]: expected {-2, 1}"));
  bad = good;
  bad.state.aux[bad.state.aux.size() - 1] = Vector::Zero(3);  // a block of the wrong size
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()),
              StartsWith(absl::StrCat("state.aux[", bad.state.aux.size() - 1, "]: has 3 entries")));
  bad = good;
  bad.state.aux.resize(page0);  // not even the index pages
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("state.aux:"));
  bad = good;
  table.Var(&bad.state, 0, table.block_size() - 1)[0] = 7;  // last update after t - 1
  r = Session::Restore(config, bad);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("last update"));
}

TEST(MultitaskSession, ExactMetricsAreTheGradientOfFOverTheTasksSeen) {
  const testing::QuadraticTasks q(6, 3, 4, 61);
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s =
        *Session::Create(testing::MultitaskConfig(algorithm, q.Family(), ConstraintSet::None()));
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
  FamilyConfig family = q.Family();
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
