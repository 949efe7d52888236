// What IR-SCG and IR-FSCG (Giang-Tran, Shafiee, Ho-Nguyen, Alg. 1 and 2)
// share: the regularized conditional-gradient step on sigma_t F + G, the
// weighted average z_t their theorems bound, and evaluating f and g on a
// view that may hold no rows.
//
// Paper indexing: the paper's iteration k = 0, 1, ... is the session's step
// t = k + 1; the iterate a round starts from (SimpleVars::x) is x_k and the
// round writes x_{k+1} and the decision z_{k+1}.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_IR_COMMON_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_IR_COMMON_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "core/batch.h"
#include "core/constraint.h"
#include "core/simple/simple_family.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

// f's value and gradient (overwritten) on `view`; when f reads rows and the
// view has none, 0 and a zero gradient (a mean over no rows is undefined).
double FOnView(SimpleFamily& family, const VecIn& x, const BatchView& view, Vector* grad);
// g's, likewise (g always reads rows).
double GOnView(SimpleFamily& family, const VecIn& x, const BatchView& view, Vector* grad);

// sigma = scale (m + 1)^-decay and the difference sigma_{i-1} - sigma_i of a
// schedule sigma_i = scale (max(i, floor) + 1)^-decay (floor = 0 for IR-SCG,
// q for IR-FSCG), the latter computed without cancellation:
// sigma_{i-1} - sigma_i = -scale (i+1)^-p expm1(-p log1p(1/i)) for i > floor.
struct RegSchedule {
  double scale = 10.0;
  double decay = 0.25;
  int64_t floor = 0;
  double Sigma(int64_t i) const;
  double Drop(int64_t i) const;  // sigma_{i-1} - sigma_i, i >= 1
};

// The averaged iterate of Alg. 1 / Alg. 2 (last lines):
//   S_{k+1} = (k+2)(k+1) sigma_{k+1} + sum_{i=1}^{k+1} w_i,
//   z_{k+1} = [(k+2)(k+1) sigma_{k+1} x_{k+1} + sum_{i=1}^{k+1} w_i x_i] / S_{k+1},
//   w_i = (i+1) i (sigma_{i-1} - sigma_i).
// Alg. 2 sums over i in [k+1] \ [q] only, which is the same sum: its sigma_i
// is constant for i <= q, so those w_i are 0.  The sum is kept normalized
// (its weight W = sum w_i and mean m = sum w_i x_i / W, a convex combination
// of iterates, so it stays in Z and bounded however long the session runs):
// aux holds m (x_dim entries) and {W} (1 entry).
// Adds w_{k+1} x_{k+1} to (m, W) and writes z_{k+1} into `decision`.
void UpdateAverage(const RegSchedule& sigma, int64_t k, const VecIn& x_next, Vector* mean,
                   double* weight, Vector* decision);

// The conditional-gradient step of Alg. 1 / 2 at x_k:
//   c = sigma d_f + d_g,  s = LMO_Z(c),  gap = <c, x_k - s>,
//   x_{k+1} = x_k + alpha (s - x_k)   (x updated in place).
// `c` and `s` are caller-owned scratch; returns the Frank-Wolfe gap of the
// estimate and adds the LMO's time to *oracle_seconds.
double ConditionalGradientStep(const ConstraintSet& z, double sigma, double alpha,
                               const Vector& d_f, const Vector& d_g, Vector* c, Vector* s,
                               Vector* x, double* oracle_seconds);

// ConditionalGradientStep and UpdateAverage at step k with x_k kept, in as
// few passes over the d-vectors as they allow: c, s = LMO(c) and
// the gap as ConditionalGradientStep, then one pass writing x_k into
// *prev, x_{k+1} into *x, the average's new mean into *mean_after (only
// when the weight grows, w_{k+1} > 0) and z_{k+1} into *decision, entry by
// entry with the same operations as theirs (the same numbers).  prev,
// mean_after and decision are resized to x's size; the six vectors (with
// c and s) must be distinct objects.
struct AveragedStep {
  Vector* x = nullptr;
  Vector* prev = nullptr;
  const Vector* mean_before = nullptr;
  Vector* mean_after = nullptr;
  double* weight = nullptr;
  Vector* decision = nullptr;
};
double StepAndAverage(const ConstraintSet& z, const RegSchedule& schedule, int64_t k, double alpha,
                      const Vector& d_f, const Vector& d_g, Vector* c, Vector* s,
                      const AveragedStep& out, double* oracle_seconds);
// w_{k+1} = (k+2)(k+1)(sigma_k - sigma_{k+1}), the weight UpdateAverage adds
// at step k (0 while sigma is flat).
double AverageIncrement(const RegSchedule& schedule, int64_t k);

// INVALID_ARGUMENT "constraint: <algorithm> needs a compact set with a linear
// minimization oracle ..." unless z.HasLmo().
absl::Status RequireLmo(const ConstraintSet& z, const char* algorithm);

// The running weight {W} at aux[i]: one finite number >= 0.
absl::Status CheckAverageWeight(const StateParts& aux, int i);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_IR_COMMON_H_
