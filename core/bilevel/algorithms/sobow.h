// SOBOW, the single-loop online bilevel optimizer with window averaging of
// Lin et al. (2023): inner GD steps, an AID hypergradient with a warm-started
// linear system, and a window mean for the x-step.  See sobow.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_SOBOW_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_SOBOW_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& SobowAlgorithm();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_SOBOW_H_
