// FSOBO, the fully single-loop online bilevel optimizer of Jia et al.
// (2026): one inner GD step and one linear-system step per round, then an
// AID hypergradient.  See fsobo.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_FSOBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_FSOBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& FsoboAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_FSOBO_H_
