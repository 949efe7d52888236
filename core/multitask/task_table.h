// Where a multi-task session keeps its per-task state: SessionState::aux,
// whose vectors are already durable (checkpoints, export, import), so a
// multi-task state needs no encoding of its own.  Per-task state is created
// when a task is first touched, so memory is proportional to the tasks
// touched, never to m (but for the index pages' handles, 16 bytes per 64
// tasks of m).
//
// Encoding of SessionState::aux (G global vectors, P = ceil(m / 64) index
// pages, B vectors per task):
//   aux[0]                      {-1, touched}: the layout's mark and the
//                               number of touched tasks
//   aux[1 .. 1 + G)             the algorithm's global vectors
//   aux[1 + G + p]              index page p: empty while no task in
//                               [64 p, 64 p + 64) was touched, else 64
//                               entries, entry i being 1 + the slot of task
//                               64 p + i (0: not touched)
//   aux[1 + G + P + k B + b]    vector b of the task in slot k (slots in the
//                               order tasks were first touched): b = 0 is the
//                               class's y_k, b >= 1 the algorithm's vectors
// A lookup reads one page; a first touch writes one page and appends one
// block.  Every aux vector is a separately owned part (core/state_parts.h),
// so a round that touches one task copies and writes that task's block, its
// page and the globals only.
//
// Earlier servers kept the touched tasks' indices in increasing order in
// aux[0] and their blocks in that order, with no pages (a "legacy" state);
// MigrateLegacy turns such a state into this layout.
#ifndef F2OBO_CORE_MULTITASK_TASK_TABLE_H_
#define F2OBO_CORE_MULTITASK_TASK_TABLE_H_

#include <cstddef>
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
  TaskTable(std::vector<int> globals, std::vector<int> block, int tasks)
      : globals_(std::move(globals)),
        block_(std::move(block)),
        tasks_(tasks),
        pages_((tasks + kPageTasks - 1) / kPageTasks) {}

  int global_count() const { return static_cast<int>(globals_.size()); }
  int block_size() const { return static_cast<int>(block_.size()); }
  // Entries of a task's vector b (b = 0: y_dim).
  int vector_size(int b) const { return block_[b]; }

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

  Vector& Var(SessionState* s, int slot, int b) const { return s->aux[Index(slot, b)]; }
  const Vector& Var(const SessionState& s, int slot, int b) const { return s.aux[Index(slot, b)]; }
  Vector& Global(SessionState* s, int g) const { return s->aux[1 + g]; }
  const Vector& Global(const SessionState& s, int g) const { return s.aux[1 + g]; }

  // Whether a state from outside (an import, a stored record) has this
  // encoding: INVALID_ARGUMENT "state.aux...: ..." naming the first
  // offending vector otherwise.
  absl::Status Validate(const SessionState& s) const;

  // Whether `s` has the layout of earlier servers (see above), and its
  // conversion into this one (INVALID_ARGUMENT, naming the vector, when it
  // is not a well-formed legacy state either).
  static bool IsLegacy(const SessionState& s);
  absl::Status MigrateLegacy(SessionState* s) const;

  // The place of a task's vector in SessionState::aux (for messages).
  size_t Index(int slot, int b) const {
    return 1 + globals_.size() + pages_ + static_cast<size_t>(slot) * block_.size() + b;
  }

 private:
  size_t PageIndex(int page) const { return 1 + globals_.size() + page; }

  std::vector<int> globals_;
  std::vector<int> block_;
  int tasks_;
  size_t pages_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_TASK_TABLE_H_
