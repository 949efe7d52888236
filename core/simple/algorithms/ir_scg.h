// IR-SCG: the iteratively regularized stochastic conditional gradient method
// of Giang-Tran, Shafiee & Ho-Nguyen (Alg. 1), one iteration per step on the
// step's rows.  The update and the choices made are written down in
// ir_scg.cc.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_IR_SCG_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_IR_SCG_H_

#include "core/simple/simple_algorithm.h"

namespace f2obo {

const SimpleAlgorithmEntry& IrScgAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_IR_SCG_H_
