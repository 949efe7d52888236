// Multi-task session state in parts (core/multitask/task_table.h): a step
// writes only its own tasks' parts, a touched task is one part holding its
// vectors, states of the earlier layouts resume with the same numbers, and
// a restored state whose task index is malformed is refused naming the
// entry.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/multitask/multitask_family.h"
#include "core/multitask/multitask_problem.h"
#include "core/multitask/multitask_state.h"
#include "core/session.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(MultitaskSession, AStepChangesOnlyThePartsOfItsOwnTasks) {
  const testing::QuadraticTasks q(3, 2, 3, 71);
  FamilyConfig family = q.BilevelFamily();
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

// A state saved by a server before state in parts (touched tasks listed in
// increasing order in aux[0], their blocks in that order, no index pages),
// or by one with index pages and a part per vector ({-1, touched} in
// aux[0]), resumes: the same numbers, in this layout.
TEST(MultitaskSession, AStateOfTheEarlierLayoutsResumesWithTheSameNumbers) {
  const testing::QuadraticTasks q(5, 2, 3, 73);
  for (const bool paged : {false, true})
    for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {  // NOLINT(whitespace/braces)
      const SessionConfig config =
          testing::MultitaskConfig(algorithm, q.BilevelFamily(), ConstraintSet::None());
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

// Memory per touched task: a task is one aux part, its vectors
// end to end, whatever the algorithm's count of vectors (a part costs ~130
// bytes besides its numbers: 9 parts a task held 3.5-4.7x the task's
// serialized bytes).  Nothing else grows with the tasks but the index
// pages (one part per 64 tasks of m).
TEST(MultitaskSession, ATouchedTaskIsOnePartHoldingItsVectors) {
  const testing::QuadraticTasks q(7, 3, 4, 5);
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    std::unique_ptr<Session> s = *Session::Create(
        testing::MultitaskConfig(algorithm, q.BilevelFamily(), ConstraintSet::None()));
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
  const SessionConfig config =
      testing::MultitaskConfig("rsvrb", q.BilevelFamily(), ConstraintSet::None());
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

}  // namespace
}  // namespace f2obo
