// AF2OBO, paper Algorithm 2: F2OBO with adaptive inner iterations.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_AF2OBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_AF2OBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& Af2oboAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_AF2OBO_H_
