// The upper step every bilevel round ends with, x_{t+1} = P_X(x_t - Gamma_t d_t)
// (F2OBO paper Alg. 1 line 10, Alg. 2 line 11, Alg. 3 line 11; the
// baselines' x-step on their direction d_t), in one place for every
// algorithm:
//   * gamma > 0 (set): Gamma_t = gamma_t I, gamma_t = gamma or gamma t^-tau
//     (UpperStepSize), exactly the step of before;
//   * gamma = 0 (the default): automatic, a coin-betting bettor per
//     coordinate i (KT betting with COCOB's normalization: Orabona & Pal,
//     NeurIPS 2016; Orabona & Tommasi, NeurIPS 2017, COCOB-Backprop):
//       g_i  = d_{t,i}, or 0 when it pushes the bettor's point w_i further
//              out of X (w_i != x_i only when the projection moved x_i)
//       L_i  <- max(L_i, |g_i|),          c_i = -g_i / L_i in [-1, 1]
//       W_i  <- max(W_i + c_i (w_i - x_{1,i}), eps_i)   (wealth, W starts at eps_i)
//       S_i  <- S_i + |c_i|,              C_i <- C_i + c_i
//       w_i  <- x_{1,i} + C_i / max(S_i + 1, 100) * W_i,   x_{t+1} = P_X(w)
//     with eps_i = 1e-3 of coordinate i's width in X (UpperStepWidths), or
//     1e-6 (1 + |x_{1,i}|) where X leaves the coordinate unbounded.
//
// Why this rule (the literature, and what it keeps or trades away):
//   * Scale.  Multiplying x_i (and X's bounds) by c multiplies d_{t,i} and
//     L_i by 1/c, leaves every coin c_i (and S_i, C_i) unchanged and
//     multiplies eps_i, W_i and w_i - x_{1,i} by c: the trajectory is the
//     same up to the scaling, and the hypergradient's magnitude never
//     enters (only its sign pattern relative to its largest value).  A
//     fixed gamma is not scale-free: at gamma = 0.001 an L2 penalty whose
//     best value is 0.05 in [0, 10] did not move in 600 steps.  X's width
//     enters only through eps_i: the wealth grows geometrically while the
//     coins agree (by up to a factor 2 a step once S_i >= 100), so a box
//     100x wider around the same optimum costs a few more steps.
//   * Noise.  On a stream the hypergradient of a coordinate is often mostly
//     noise (a rare class's logit offset sees a few rows a step).  The
//     bettor bets the fraction C_i / S_i ~ t^-1/2 of its wealth on
//     zero-mean coins and its wealth does not grow on them (a fair game):
//     x_i stays near x_{1,i}.  Distance over gradients (DoG: Ivgi, Hinder &
//     Carmon, ICML 2023), the rule used before, steps r_i / sqrt(G_i) with
//     r_i the largest distance travelled: a random walk of such steps
//     travels ~ r_i sqrt(ln t) > r_i, so r_i ratchets up on noise alone; on
//     the suite's loss-tuning stream the offsets ran to the box's edge
//     (held-out loss +24% over the untuned start, +2,000% in the 100x box;
//     bench/RESULTS.md).  Damping DoG (eta r_i / sqrt(G_i), eta = 0.1-0.3)
//     postpones the ratchet and slows every consistent direction alike;
//     AdaGrad with the box's width (Gamma_{t,i} = eta D_i / sqrt(G_i))
//     steps ~ D_i / sqrt(t) whatever the distance to the optimum and blew
//     up in the 100x box.  Both measured in bench/RESULTS.md.
//   * The theorem kept: for a 1-D convex online problem with |g_t| <= L
//     known, the KT bettor's regret against any u is at most
//     L (eps + |u| sqrt(T ln(1 + 24 T^2 u^2 / eps^2))) (Orabona & Pal 2016,
//     Cor. 5), for adversarial sequences: summed over the coordinates, the
//     online convex regret O~(sum_i |u_i - x_{1,i}| L_i sqrt(T)) with no
//     step size, the rate of the best fixed step in hindsight up to the
//     log.  Traded: L_i is the running maximum, not known in advance (the
//     coins are normalized by it, as in COCOB; not knowing L costs an
//     additive term of the order L_max |u - x_1| at best: Cutkosky, COLT
//     2019), the floor eps_i on the wealth (COCOB-Backprop's, so that a
//     bettor that lost can bet again after the stream drifts) and
//     COCOB's 100 in max(S_i + 1, 100) (at most 1% of the wealth per net
//     coin while fewer than 100 have been seen: no large bet on a few
//     first gradients) are departures from the KT analysis.  X enters by
//     the reduction of Cutkosky & Orabona (COLT 2018, Sec. 4): a bettor on
//     the whole line, played at P_X(w), whose gradient is zeroed when it
//     points out of X from outside; for a box that is exactly their
//     reduction per coordinate, for balls and simplices the per-coordinate
//     form is a heuristic.
//   * The paper's local-regret bounds (Theorems 3.1, 3.2, 4.1, 5.1) assume
//     a given gamma_t of the order of 1/(lambda_1 t^tau L_F) (a smoothness
//     the user does not know); with automatic steps they do not apply as
//     stated, nor does the convex regret above to a nonconvex F; the
//     windowed local regret of a moving stream is not covered by any
//     parameter-free result we know of.
//   * The regret term's gradient mapping G_X(x, grad F, gamma) (paper
//     Eq. (3)) takes one gamma: the round reports max_i |w_{t+1,i} -
//     w_{t,i}| / |d_{t,i}|, the step's largest effective gamma.
//
// The state: one aux part of 5 x_dim numbers, [L | W | x_1 | S | C], after
// the algorithm's own parts, so that kill -9 / resume and checkpoints
// continue bit-identically; a stored state written before it (the
// algorithm's own parts only, or DoG's 3 x_dim part) restores with the part
// fresh (BilevelProblem::UpgradeRestored).
#ifndef F2OBO_CORE_BILEVEL_HYPERGRADIENTS_UPPER_STEP_H_
#define F2OBO_CORE_BILEVEL_HYPERGRADIENTS_UPPER_STEP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/constraint.h"
#include "core/options.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

inline bool GammaIsAuto(const AlgorithmOptions& o) { return o.gamma == 0.0; }

// Numbers per coordinate in the automatic step's aux part, [L | W | x_1 | S | C].
constexpr int kUpperStepParts = 5;

// Width of coordinate i over X: the box's hi_i - lo_i, the balls' 2 r, the
// simplex's total; +inf where X does not bound the coordinate.
Vector UpperStepWidths(const ConstraintSet& set, int x_dim);

class UpperStep {
 public:
  // `slot`: the aux part it keeps its state in (the algorithm's own parts
  // come first).
  UpperStep(const AlgorithmOptions& o, const ConstraintSet& set, int x_dim, size_t slot);

  bool automatic() const { return automatic_; }
  // Adds its aux part's size to `sizes` (nothing when gamma is set).
  void AppendLayout(std::vector<int>* sizes) const;

  // x <- P_X(x - Gamma_t d) (a gamma set) or the bettors' P_X(w); returns
  // the reported gamma_t (the set one, or the largest effective step of a
  // coordinate; 0 when none moved).
  double Step(const Vector& d, int64_t t, StateParts* aux, Vector* x) const;

  // Makes aux[slot] the automatic step's fresh part (from x) when it is
  // missing or of another size (DoG's 3 x_dim).
  void EnsurePart(const Vector& x, StateParts* aux) const;

 private:
  AlgorithmOptions o_;
  ConstraintSet set_;
  int x_dim_;
  size_t slot_;
  bool automatic_;
  // eps_i, the initial (and least) wealth of coordinate i started at x1.
  double Epsilon(int i, double x1) const;

  Vector widths_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_HYPERGRADIENTS_UPPER_STEP_H_
