// RSVRB, the randomized stochastic variance-reduced bilevel method of Guo,
// Hu, Zhang & Yang for m lower-level problems (paper Alg. 2): per step, the
// sampled tasks' SVRB estimators by randomized-coordinate STORM, the
// others' "delay update until sampled" decay applied lazily and exactly,
// and a second STORM estimator d_t of grad F along a task j_t.  The update
// and the choices made are written down in rsvrb.cc.
#ifndef F2OBO_CORE_MULTITASK_RSVRB_H_
#define F2OBO_CORE_MULTITASK_RSVRB_H_

#include "core/multitask/multitask_algorithm.h"

namespace f2obo {

const MultitaskAlgorithmEntry& RsvrbAlgorithm();

// The places in a task's block (TaskTable; kRsvrbY is the class's y_i).
enum RsvrbTaskVector {
  kRsvrbY = 0,
  kRsvrbYPrev,  // y_i before its last update (the STORM correction point)
  kRsvrbU,      // grad_x f_i estimate (d1)
  kRsvrbW,      // grad_y f_i estimate (d2)
  kRsvrbV,      // grad_y g_i estimate (d2)
  kRsvrbJ,      // grad2_xy g_i estimate (d1 x d2, column-major)
  kRsvrbH,      // grad2_yy g_i estimate (d2 x d2, column-major)
  kRsvrbZ,      // z_i = u - J H^{-1} w at its last update (d1)
  kRsvrbMeta,   // {step of the last update s_i, the y-step alpha used then}
  kRsvrbTaskVectorCount
};
// The global vectors.
enum RsvrbGlobal { kRsvrbXPrev = 0, kRsvrbD, kRsvrbGlobalCount };

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_RSVRB_H_
