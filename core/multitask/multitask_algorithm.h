// A multi-task algorithm: one round per time step on a multi-task session's
// state (x, the scalar lambda, and the per-task state of TaskTable in
// SessionState::aux).  Its registry entry (MultitaskAlgorithmEntry, defined
// in the algorithm's own file and listed in multitask_algorithms.cc) says
// everything else about it.
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_ALGORITHM_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_ALGORITHM_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/algorithm_info.h"
#include "core/batch.h"
#include "core/constraint.h"
#include "core/multitask/multitask_family.h"
#include "core/multitask/multitask_report.h"
#include "core/multitask/multitask_state.h"
#include "core/multitask/task_table.h"
#include "core/options.h"
#include "core/round_control.h"
#include "core/state.h"

namespace f2obo {

// StoppableRound: loops ask ContinueRound() once per inner iteration
// (core/round_control.h).
class MultitaskAlgorithm : public StoppableRound {
 public:
  virtual ~MultitaskAlgorithm() = default;

  // Sizes of its global vectors and of a task's vectors after y (the
  // TaskTable's block is {y_dim} followed by these).
  virtual std::vector<int> GlobalLayout() const = 0;
  virtual std::vector<int> TaskLayout() const = 0;
  // The global vectors at t = 1, x_1 given.
  virtual std::vector<Vector> InitialGlobals(const VecIn& x1) const = 0;
  // A never-touched task's block (y first), as its first round finds it.
  virtual std::vector<Vector> InitialTaskBlock() const = 0;
  // Checks of a restored state beyond its shapes and magnitudes (e.g. the
  // per-task step of last update lies in [1, t - 1]); INVALID_ARGUMENT
  // "state.aux[i]...: ..." naming the vector.
  virtual absl::Status ValidateTaskState(const SessionState& s, const TaskTable& table) const = 0;

  // Runs round s->t on validated data (data.tasks non-empty, distinct
  // tasks in [0, m)), updating x, lambda, rng and the per-task state in
  // place and filling `report`.  The caller passes a scratch copy and
  // commits it only if this returns OK and the result is in range, so it
  // may leave the state half-written on failure.  Errors need no "step t"
  // prefix.  Cost: O(tasks in the step) family work and O(1)
  // lookups, never O(m).
  virtual absl::Status Round(const StepData& data, MultitaskFamily& family, const TaskTable& table,
                             SessionState* s, MultitaskReport* report) = 0;
};

// What a factory gets: validated options (copied) and the session's shapes.
struct MultitaskAlgorithmContext {
  AlgorithmOptions options;
  ConstraintSet constraint;
  int x_dim = 0;
  int y_dim = 0;
  int tasks = 0;
  Vector y0;  // every task's initial y_i (y_dim entries)
  Vector z0;  // every task's initial z_i (mt_f2obo)
};

struct MultitaskAlgorithmEntry {
  AlgorithmInfo info;  // info.problem_class == ProblemClass::kMultitaskBilevel
  // Builds the algorithm for validated options; may still refuse a session
  // it cannot serve (rsvrb's explicit-dimension limit), INVALID_ARGUMENT
  // naming the field.
  absl::StatusOr<std::unique_ptr<MultitaskAlgorithm>> (*create)(const MultitaskAlgorithmContext&);
};

// In registration order.
const std::vector<const MultitaskAlgorithmEntry*>& MultitaskAlgorithms();
// nullptr if `name` is not a multi-task algorithm.
const MultitaskAlgorithmEntry* FindMultitaskAlgorithm(absl::string_view name);

// The probability p_i of a step's task (RSVRB's 1/p_i weights): the
// client's, or k / m for k tasks in the step (uniform sampling).
double TaskProbability(const TaskData& task, int tasks_in_step, int m);

// The smallest sampling probability a step may give a task:
// RSVRB weights the task's estimators by 1/p, so a tiny p (5e-324 gives an
// infinite weight) made rsvrb refuse a round that mt_f2obo, in the same
// group, applied.  1/p <= 1e12 keeps an estimate of input-sized gradients
// far inside the state bound; a task drawn once in 10^12 steps is not a
// sampling scheme a stream can have.
inline constexpr double kMinTaskProbability = 1e-12;

// For algorithms that keep the step of each task's last update in its
// block's vector `b` at entry 0: every one must be a whole number in
// [1, t - 1] (INVALID_ARGUMENT naming the vector otherwise).
absl::Status CheckLastUpdateSteps(const SessionState& s, const TaskTable& table, int b);

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_ALGORITHM_H_
