// The simple bilevel class's state (SPEC section 9): besides x_t (the
// algorithm's iterate), the decision served to clients: the weighted
// average z_t that IR-SCG / IR-FSCG's theorems bound, or AGM-BiO's x_k
// itself.  Algorithm-owned state (STORM/SPIDER estimators, previous
// iterates, AGM-BiO's y_k, z_k and its projected-gradient run on g, the
// row windows) lives in SessionState::aux, its layout declared by the
// algorithm (SimpleAlgorithm::AuxLayout).
//
// Running sums (RunningMetrics::sums, SimpleSum order) are those of the
// class's exact metrics (core/simple/simple_metrics.h).
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_STATE_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_STATE_H_

#include <cstdint>
#include <vector>

#include "core/metrics/sampling.h"
#include "core/rng.h"
#include "core/state.h"
#include "core/types.h"

namespace f2obo {

// Places in SessionState::vectors and RunningMetrics::sums.
enum SimpleVector { kSimpleDecision = 0, kSimpleVectorCount };
enum SimpleSum {
  kSimpleInnerGap = 0,      // sum of g(decision) - g* over evaluated steps
  kSimpleOuterGap,          // sum of f(decision) - f* where f* was available
  kSimpleOuterGapSteps,     // evaluated steps with an f*
  kSimpleUnconvergedSteps,  // evaluated steps whose g* solve did not converge
                            // (their terms are left out of the sums)
  // Due steps without exact metrics, and the Horvitz-Thompson estimate of
  // kSimpleInnerGap's sum over every due step with its variance estimate
  // (core/metrics/sampling.h).  Added last: a state saved before has them
  // start at zero.
  kSimpleSkippedSteps,
  kSimpleInnerGapEstimate,
  kSimpleInnerGapVariance,
  kSimpleSumCount
};
inline constexpr SampleSlots kSimpleSampleSlots{kSimpleSkippedSteps, kSimpleInnerGapEstimate,
                                                kSimpleInnerGapVariance};

// vectors {"decision" (x_dim)}, no scalars, the sums above.
StateLayout SimpleLayout(int x_dim);

// What a simple bilevel round reads and writes, by name.  Valid while the
// state it was made from is alive and not resized.
struct SimpleVars {
  int64_t t;
  Vector& x;         // the iterate x_t
  Vector& decision;  // the point served: z_t (IR-SCG, IR-FSCG) or x_k (AGM-BiO)
  Rng& rng;
  StateParts& aux;
};
SimpleVars SimpleView(SessionState* s);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_STATE_H_
