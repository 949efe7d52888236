// The bilevel class's state (SPEC section 2): besides x_t, the warm starts
// y_t (of the y-loop, approximating y*_lambda) and z_t (of the z-loop,
// approximating y*), and the penalty multiplier lambda_t; its running sums
// are those of SPEC section 5.  Views give the bilevel algorithms named
// access to the generic SessionState.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_STATE_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_STATE_H_

#include <cstdint>
#include <vector>

#include "core/metrics/sampling.h"
#include "core/rng.h"
#include "core/state.h"
#include "core/types.h"

namespace f2obo {

// Places in SessionState::vectors, ::scalars and RunningMetrics::sums.
enum BilevelVector { kBilevelY = 0, kBilevelZ = 1, kBilevelVectorCount };
enum BilevelScalar { kBilevelLambda = 0, kBilevelScalarCount };
enum BilevelSum {
  kBlreg = 0,   // sum of regret terms r_s (paper Eq. 2)
  kVariation,   // sum of v_s: trajectory estimate of V_T
  kDrift,       // sum of d_s: trajectory estimate of H_2,T
  kDriftSteps,  // steps whose v_s, d_s were available
  // Of the evaluated steps, those whose r_s was left out of kBlreg (its
  // solve did not converge); of kDriftSteps, those whose v_s, d_s were left
  // out of kVariation and kDrift.
  kUnconvergedSteps,
  kUnconvergedDriftSteps,
  // Due steps without exact metrics, and the Horvitz-Thompson estimate of
  // kBlreg's sum over every due step with its variance estimate
  // (core/metrics/sampling.h).  Added last: a state saved before has them
  // start at zero (Session::Restore).
  kSkippedSteps,
  kBlregEstimate,
  kBlregVariance,
  kBilevelSumCount
};
inline constexpr SampleSlots kBilevelSampleSlots{kSkippedSteps, kBlregEstimate, kBlregVariance};

StateLayout BilevelLayout(int y_dim);

// What a bilevel round reads and writes, by name.  Valid while the state
// it was made from is alive and not resized.
struct BilevelVars {
  int64_t t;
  Vector& x;
  Vector& y;
  Vector& z;
  double& lambda;
  Rng& rng;
  StateParts& aux;
};
BilevelVars BilevelView(SessionState* s);

struct ConstBilevelVars {
  int64_t t;
  const Vector& x;
  const Vector& y;
  const Vector& z;
  double lambda;
};
ConstBilevelVars BilevelView(const SessionState& s);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_STATE_H_
