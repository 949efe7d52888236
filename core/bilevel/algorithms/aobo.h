// AOBO, the adaptive-inner-iteration online bilevel optimizer of Jia et al.
// (2026): GD on g to a gradient tolerance, then an AID hypergradient.  See
// aobo.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_AOBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_AOBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& AoboAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_AOBO_H_
