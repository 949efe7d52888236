// IR-FSCG: the iteratively regularized finite-sum conditional gradient
// method of Giang-Tran, Shafiee & Ho-Nguyen (Alg. 2), with SPIDER estimates
// on a window of the last W rows of each kind.  The update and the choices
// made are written down in ir_fscg.cc.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_IR_FSCG_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_IR_FSCG_H_

#include "core/simple/simple_algorithm.h"

namespace f2obo {

const SimpleAlgorithmEntry& IrFscgAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_IR_FSCG_H_
