// What one multi-task round did (the class-specific half of a StepReport):
// written by the multi-task algorithms, sent as the wire's
// RoundReport.multitask.
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_REPORT_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_REPORT_H_

#include <cstdint>

#include "core/types.h"

namespace f2obo {

struct MultitaskReport {
  int tasks = 0;              // tasks the step carried (RSVRB's sampled i_t)
  int new_tasks = 0;          // of them, touched for the first time
  int64_t tasks_touched = 0;  // tasks holding state after the round
  int d_task = -1;            // rsvrb: j_t, the task of the d_t update (-1: none)
  double lambda = 0.0;        // mt_f2obo: lambda_t (0 for rsvrb)
  double alpha = 0.0;         // inner step (rsvrb: the y-step; mt_f2obo: the z-step)
  double beta = 0.0;          // mt_f2obo: the y-step beta_t
  double gamma = 0.0;         // upper step
  int z_iterations = 0;       // inner steps per task on z (mt_f2obo)
  int y_iterations = 0;       // inner steps per task on y
  double residual_y = 0.0;    // mean over the step's tasks (svrb's / f2obo's residual_y)
  double residual_z = 0.0;    // mean over the step's tasks (mt_f2obo)
  // The direction x moved along (rsvrb: d_{t+1}; mt_f2obo: the weighted
  // average of the per-task estimates): the round's estimate of grad F(x_t),
  // which the exact metrics compare with the truth.
  Vector direction;
  int batch_size = 0;        // rsvrb: rows per inner draw (0: whole batches)
  int hyper_batch_size = 0;  // rsvrb: rows per upper draw
  int64_t rows_processed = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_REPORT_H_
