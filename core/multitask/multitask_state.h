// The multi-task class's state (SPEC section 9.3): x_t in SessionState::x,
// the scalar lambda_t (mt_f2obo's multiplier; 0 for rsvrb), no fixed-size
// class vectors, and every per-task variable (y_i and the algorithm's)
// in SessionState::aux as core/multitask/task_table.h encodes it.  Its
// running sums are those of the class's exact metrics
// (core/multitask/multitask_metrics.h).
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_STATE_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_STATE_H_

#include "core/metrics/sampling.h"
#include "core/multitask/multitask_metrics.h"
#include "core/state.h"

namespace f2obo {

// Places in SessionState::scalars and RunningMetrics::sums.
enum MultitaskScalar { kMultitaskLambda = 0, kMultitaskScalarCount };
enum MultitaskSum {
  kMultitaskBlreg = 0,         // sum of the regret terms of converged steps
  kMultitaskUnconvergedSteps,  // evaluated steps left out of it (a task's solve
                               // did not converge)
  // Task i's regret terms summed over the evaluated steps at which it was
  // seen and its solves converged, for i < kReportedTasks (at
  // kMultitaskTaskRegret + i).  Added after the first two: a state saved
  // before has them start at zero (Session::Restore).
  kMultitaskTaskRegret,
  // Due steps without exact metrics, and the Horvitz-Thompson estimate of
  // kMultitaskBlreg's sum over every due step with its variance estimate
  // (core/metrics/sampling.h).  Added last: a state saved before has them
  // start at zero.
  kMultitaskSkippedSteps = kMultitaskTaskRegret + kReportedTasks,
  kMultitaskBlregEstimate,
  kMultitaskBlregVariance,
  kMultitaskSumCount
};
inline constexpr SampleSlots kMultitaskSampleSlots{kMultitaskSkippedSteps, kMultitaskBlregEstimate,
                                                   kMultitaskBlregVariance};

// vectors {}, scalars {"lambda"}, sums {"blreg", "unconverged_steps",
// "task0_regret", ..., "task3_regret", "skipped_steps", "blreg_estimate",
// "blreg_estimate_variance"}.
StateLayout MultitaskLayout();

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_STATE_H_
