// SVRB, the single-task stochastic variance-reduced bilevel method of Guo &
// Yang: STORM estimators of every derivative in the hypergradient, with the
// projections S^u_C and S^l_lambda (core/hypergradients/spectral_projections.h).
// Explicit d1 x d2 and d2 x d2 matrices: sessions with x_dim or y_dim above
// options.max_explicit_dim are refused.  The update and the choices made are
// written down in svrb.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_SVRB_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_SVRB_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& SvrbAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_SVRB_H_
