// Where a multi-task session keeps its per-task state: SessionState::aux,
// whose vectors are already durable (checkpoints, export, import), so a
// multi-task state needs no encoding of its own.  Per-task state is created
// when a task is first touched, so memory is proportional to the tasks
// touched, never to m.
//
// Encoding of SessionState::aux (G global vectors, B vectors per task):
//   aux[0]                      the touched tasks' indices in increasing
//                               order (whole numbers stored as doubles)
//   aux[1 .. 1 + G)             the algorithm's global vectors
//   aux[1 + G + k B + b]        vector b of the k-th touched task (k in
//                               aux[0]'s order): b = 0 is the class's y_k,
//                               b >= 1 the algorithm's per-task vectors
// Lookups are binary searches on aux[0] (O(log touched)); a first touch
// inserts one block (moving the vectors' handles after it, not their
// contents).
#ifndef F2OBO_CORE_MULTITASK_TASK_TABLE_H_
#define F2OBO_CORE_MULTITASK_TASK_TABLE_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "core/state.h"
#include "core/types.h"

namespace f2obo {

class TaskTable {
 public:
  // `globals`: the sizes of the global vectors; `block`: of one task's
  // vectors (block[0] is y's).
  TaskTable(std::vector<int> globals, std::vector<int> block)
      : globals_(std::move(globals)), block_(std::move(block)) {}

  int global_count() const { return static_cast<int>(globals_.size()); }
  int block_size() const { return static_cast<int>(block_.size()); }
  // Entries of a task's vector b (b = 0: y_dim).
  int vector_size(int b) const { return block_[b]; }

  // aux = {no task touched, `globals`} (sizes must match).
  void Init(SessionState* s, std::vector<Vector> globals) const;

  int touched(const SessionState& s) const { return static_cast<int>(s.aux[0].size()); }
  int task_at(const SessionState& s, int slot) const { return static_cast<int>(s.aux[0][slot]); }
  // The slot of `task`, or -1 if it was never touched.
  int Find(const SessionState& s, int task) const;
  // Adds `task` (not touched yet) with the vectors `block` (copied; sizes
  // must match); returns its slot.
  int Insert(SessionState* s, int task, const std::vector<Vector>& block) const;

  Vector& Var(SessionState* s, int slot, int b) const { return s->aux[Index(slot, b)]; }
  const Vector& Var(const SessionState& s, int slot, int b) const { return s.aux[Index(slot, b)]; }
  Vector& Global(SessionState* s, int g) const { return s->aux[1 + g]; }
  const Vector& Global(const SessionState& s, int g) const { return s.aux[1 + g]; }

  // Whether a state from outside (an import, a stored record) has this
  // encoding for m tasks: INVALID_ARGUMENT "state.aux...: ..." naming the
  // first offending vector otherwise.
  absl::Status Validate(const SessionState& s, int tasks) const;

  // The place of a task's vector in SessionState::aux (for messages).
  size_t Index(int slot, int b) const {
    return 1 + globals_.size() + static_cast<size_t>(slot) * block_.size() + b;
  }

 private:
  std::vector<int> globals_;
  std::vector<int> block_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_TASK_TABLE_H_
