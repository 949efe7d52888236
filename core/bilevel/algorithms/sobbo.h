// SOBBO, the stochastic online Bregman bilevel optimizer of Bohne et al.
// (2024): OBBO on seeded mini-batches with a window-averaged x-step.  See
// sobbo.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_SOBBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_SOBBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& SobboAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_SOBBO_H_
