// mt_f2obo: a fully first-order multi-task round, OUR EXTENSION (neither the
// F2OBO paper nor the RSVRB paper has it): F2OBO's z/y loops and penalty
// hypergradient per task the step carries, x stepped on the weighted
// average of every touched task's latest estimate.  The update and its
// choices are written down in mt_f2obo.cc.
#ifndef F2OBO_CORE_MULTITASK_MT_F2OBO_H_
#define F2OBO_CORE_MULTITASK_MT_F2OBO_H_

#include "core/multitask/multitask_algorithm.h"

namespace f2obo {

const MultitaskAlgorithmEntry& MtF2oboAlgorithm();

// The places in a task's block (TaskTable; kMtY is the class's y_i).
enum MtF2oboTaskVector {
  kMtY = 0,
  kMtZ,     // z_i, the z-loop's warm start (approximates y_i*)
  kMtH,     // h_i, the task's latest penalty hypergradient (d1)
  kMtMeta,  // {step of the task's last update}
  kMtTaskVectorCount
};
// The global vectors: S = sum_i w_i h_i and {W = sum_i w_i}.
enum MtF2oboGlobal { kMtSum = 0, kMtWeight, kMtGlobalCount };

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MT_F2OBO_H_
