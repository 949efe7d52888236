// Where a multi-task session keeps its per-task state: SessionState::aux,
// whose vectors are already durable (checkpoints, export, import), so a
// multi-task state needs no encoding of its own.  Per-task state is created
// when a task is first touched, so memory is proportional to the tasks
// touched, never to m (but for the index pages' handles, 16 bytes per 64
// tasks of m).
//
// Encoding of SessionState::aux (G global vectors, P = ceil(m / 64) index
// pages, B vectors per task):
//   aux[0]                  {-2, touched}: the layout's mark and the number
//                           of touched tasks
//   aux[1 .. 1 + G)         the algorithm's global vectors
//   aux[1 + G + p]          index page p: empty while no task in
//                           [64 p, 64 p + 64) was touched, else 64 entries,
//                           entry i being 1 + the slot of task 64 p + i
//                           (0: not touched)
//   aux[1 + G + P + k]      the block of the task in slot k (slots in the
//                           order tasks were first touched): its B vectors
//                           end to end, vector b = 0 the class's y_k, b >= 1
//                           the algorithm's
// A lookup reads one page; a first touch writes one page and appends one
// block.  Every aux vector is a separately owned part (core/state_parts.h),
// so a round that touches one task copies and writes that task's block, its
// page and the globals only.
//
// One part per task, not one per vector (for memory): a part costs
// ~130 bytes besides its numbers (its shared handle, its table slot, the
// heap block's alignment and header), so rsvrb's 9 vectors of d = 4 as 9
// parts held 3.5-4.7x their serialized bytes; as one part ~1.15x.  A round
// works on a task through Load / Store, copies into the algorithm's own
// Vectors (O(the block), which the round reads and writes anyway), so the
// arithmetic runs on exactly the objects it ran on before: no result
// depends on where in a block a vector starts (Eigen's vectorized sums
// peel by address alignment).
//
// Earlier layouts, turned into this one at Restore (Problem::
// UpgradeRestored): the same with aux[0] = {-1, touched} and each of a
// task's vectors its own aux entry (aux[1 + G + P + k B + b]; stores and
// exports of schema 5 before this change), and before that the "legacy"
// one: the touched tasks' indices in increasing order in aux[0], their
// blocks (B vectors each) in that order, no pages.
#ifndef F2OBO_CORE_MULTITASK_TASK_TABLE_H_
#define F2OBO_CORE_MULTITASK_TASK_TABLE_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/state.h"
#include "core/types.h"

namespace f2obo {

class TaskTable {
 public:
  // Tasks per index page.
  static constexpr int kPageTasks = 64;

  // `globals`: the sizes of the global vectors; `block`: of one task's
  // vectors (block[0] is y's); `tasks`: m.
  TaskTable(std::vector<int> globals, std::vector<int> block, int tasks);

  int global_count() const { return static_cast<int>(globals_.size()); }
  int block_size() const { return static_cast<int>(block_.size()); }
  // Entries of a task's vector b (b = 0: y_dim).
  int vector_size(int b) const { return block_[b]; }
  // Entries of a task's whole block.
  int block_entries() const { return offset_.back(); }

  // aux = {no task touched, `globals`, empty pages} (sizes must match).
  void Init(SessionState* s, std::vector<Vector> globals) const;

  int touched(const SessionState& s) const { return static_cast<int>(s.aux[0][1]); }
  // The task in `slot` (reads every page: for messages only).
  int task_at(const SessionState& s, int slot) const;
  // The slot of `task`, or -1 if it was never touched.  O(1).
  int Find(const SessionState& s, int task) const {
    const Vector& page = s.aux[PageIndex(task / kPageTasks)];
    return page.size() == 0 ? -1 : static_cast<int>(page[task % kPageTasks]) - 1;
  }
  // Adds `task` (not touched yet) with the vectors `block` (copied; sizes
  // must match); returns its slot.
  int Insert(SessionState* s, int task, const std::vector<Vector>& block) const;

  // The task in `slot`'s vectors into `block` (sized here), and back.
  void Load(const SessionState& s, int slot, std::vector<Vector>* block) const;
  void Store(SessionState* s, int slot, const std::vector<Vector>& block) const;

  // A view of one vector of a task (reads; for arithmetic, Load it).
  Eigen::Map<const Vector> Var(const SessionState& s, int slot, int b) const {
    return Eigen::Map<const Vector>(s.aux[Index(slot)].data() + offset_[b], block_[b]);
  }
  Eigen::Map<Vector> Var(SessionState* s, int slot, int b) const {
    return Eigen::Map<Vector>(s->aux[Index(slot)].data() + offset_[b], block_[b]);
  }
  Vector& Global(SessionState* s, int g) const { return s->aux[1 + g]; }
  const Vector& Global(const SessionState& s, int g) const { return s.aux[1 + g]; }

  // Whether a state from outside (an import, a stored record) has this
  // encoding: INVALID_ARGUMENT "state.aux...: ..." naming the first
  // offending vector otherwise.
  absl::Status Validate(const SessionState& s) const;

  // Whether `s` has the layout before pages ("legacy", see above) or the one
  // with a part per vector, and their conversion into this one
  // (INVALID_ARGUMENT, naming the vector, when it is not a well-formed state
  // of that layout either).
  static bool IsLegacy(const SessionState& s);
  static bool IsPartPerVector(const SessionState& s);
  absl::Status MigrateLegacy(SessionState* s) const;
  absl::Status MigratePartPerVector(SessionState* s) const;

  // The place in SessionState::aux of the block in `slot`.
  size_t Index(int slot) const { return 1 + globals_.size() + pages_ + static_cast<size_t>(slot); }
  // "state.aux[i][j]" for entry `entry` of vector b of the task in `slot`.
  std::string Where(int slot, int b, int entry) const;

 private:
  size_t PageIndex(int page) const { return 1 + globals_.size() + page; }
  // Validate for the layout marked `mark` whose tasks are `per_slot.size()`
  // aux vectors each, of those sizes.
  absl::Status ValidateLayout(const SessionState& s, double mark,
                              const std::vector<int>& per_slot) const;
  // The block of vectors `parts[first .. first + B)` end to end.
  Vector Joined(const StateParts& parts, size_t first) const;

  std::vector<int> globals_;
  std::vector<int> block_;
  std::vector<int> offset_;  // of vector b in a block; offset_[B] = its entries
  int tasks_;
  size_t pages_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_TASK_TABLE_H_
