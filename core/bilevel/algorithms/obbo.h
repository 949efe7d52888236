// OBBO, the online Bregman bilevel optimizer of Bohne et al. (2024), in its
// Euclidean instance: K inner GD steps on g and an ITD hypergradient.  The
// update and the choices made are written down in obbo.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_OBBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_OBBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& ObboAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_OBBO_H_
