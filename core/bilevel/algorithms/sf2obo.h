// SF2OBO (paper Algorithm 3): stochastic mini-batches drawn from the step's
// batches with the session's seeded RNG.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_SF2OBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_SF2OBO_H_

#include "core/bilevel/bilevel_algorithm_registry.h"

namespace f2obo {

const BilevelAlgorithmEntry& Sf2oboAlgorithm();

// B_t = min(rows, ceil(scale t^growth)); exposed for tests.
int ScheduledBatchSize(double scale, double growth, int64_t t, int rows);
// K_t = clamp(ceil(c_K max(t^(b - tau), t^a) log(t + 1)), 1, max_steps).
int ScheduledInnerSteps(const AlgorithmOptions& o, int64_t t);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_SF2OBO_H_
