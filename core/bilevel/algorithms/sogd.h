// SOGD, the stochastic online bilevel method of Nazari et al. (2025): one
// inner SGD step, one linear-system step and a momentum search direction
// per round.  See sogd.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_SOGD_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_SOGD_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& SogdAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_SOGD_H_
