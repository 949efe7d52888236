// F2OBO (paper Algorithm 1) and its single-loop variant F2OBO-SL (K = 1).
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_F2OBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_F2OBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& F2oboAlgorithm();
const BilevelAlgorithmEntry& F2oboSlAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_F2OBO_H_
