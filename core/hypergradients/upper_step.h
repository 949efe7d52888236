// The upper step every bilevel round ends with, x_{t+1} = P_X(x_t - Gamma_t d_t)
// (F2OBO paper Alg. 1 line 10, Alg. 2 line 11, Alg. 3 line 11; the
// baselines' x-step on their direction d_t), in one place for every
// algorithm:
//   * gamma > 0 (set): Gamma_t = gamma_t I, gamma_t = gamma or gamma t^-tau
//     (UpperStepSize), exactly the step of before;
//   * gamma = 0 (the default): automatic, a step per coordinate i,
//       G_i  <- G_i + d_{t,i}^2
//       r_i  <- max(r_i, |x_{t,i} - x_{1,i}|),   r_i starts at r_eps,i
//       Gamma_{t,i} = r_i / sqrt(G_i)
//     the "distance over gradients" rule (DoG: Ivgi, Hinder & Carmon,
//     ICML 2023, Alg. 1; applied per coordinate as their layer-wise L-DoG
//     is per layer) with r_eps,i = 1e-3 of coordinate i's width in X
//     (UpperStepWidths), or DoG's own 1e-6 (1 + |x_{1,i}|) where X leaves
//     the coordinate unbounded.
//
// Why this rule (the literature, and what it keeps or trades away):
//   * Scale.  Multiplying x_i (and X's bounds) by c multiplies d_{t,i} by
//     1/c, r_i by c and G_i by 1/c^2: Gamma_{t,i} d_{t,i} scales by c, the
//     trajectory is the same up to the scaling.  A fixed gamma is not: at
//     gamma = 0.001 an L2 penalty whose best value is 0.05 in [0, 10] did
//     not move in 600 steps, while one in [0, 0.1] did.  The width of X
//     enters only through r_eps (log(width / distance) steps of doubling:
//     r_i can at most double a step, as |Gamma_{t,i} d_{t,i}| <= r_i), so a
//     box 100x wider around the same optimum costs ~7 more steps, not 100x
//     more or 100x larger oscillations.
//   * Per-coordinate AdaGrad with Gamma_{t,i} = D_i / sqrt(2 G_i), D_i the
//     width of a box X, keeps the online convex regret bound
//     sqrt(2) sum_i D_i sqrt(sum_t g_{t,i}^2) = O(sqrt(T)) without knowing
//     a gradient bound (McMahan & Streeter, COLT 2010, Thm. on per-
//     coordinate rates; Duchi, Hazan & Singer, JMLR 2011, Thm. 5).  DoG
//     replaces D_i by the distance travelled, r_i <= D_i inside the box, so
//     each step is at most AdaGrad's: its step-size part of that bound is
//     kept; its D_i^2/Gamma_T part is not (Gamma_{t,i} is not monotone when
//     r_i grows), and DoG's own guarantee is for stochastic convex
//     objectives (Ivgi et al. Thm. 3.1: the weighted average iterate within
//     O(log-factor (d_0 + r) G / sqrt(T)) of the optimum), not for an
//     adversarial stream.  What the box-width AdaGrad would cost instead:
//     steps of size ~ D_i / sqrt(t) whatever the distance to the optimum,
//     oscillations 100x larger in a box 100x wider.
//   * The paper's local-regret bounds (Theorems 3.1, 3.2, 4.1, 5.1) assume
//     a given gamma_t of the order of 1/(lambda_1 t^tau L_F) (a smoothness
//     the user does not know); with automatic steps they do not apply as
//     stated.  For smooth nonconvex objectives AdaGrad-type steps reach
//     first-order stationarity at the O~(1/sqrt(T)) rate without knowing
//     L (Ward, Wu & Bottou, ICML 2019; Defossez et al., TMLR 2022 for the
//     per-coordinate form); the windowed local regret of a moving stream is
//     not covered by those results either.
//   * The regret term's gradient mapping G_X(x, grad F, gamma) (paper
//     Eq. (3)) takes one gamma: the round reports max_i Gamma_{t,i}.
//
// The state: one aux part of 3 x_dim numbers, [G | r | x_1], after the
// algorithm's own parts, so that kill -9 / resume and checkpoints continue
// bit-identically; a stored state written before it (the algorithm's own
// parts only) restores with the part fresh (BilevelProblem::UpgradeRestored).
#ifndef F2OBO_CORE_HYPERGRADIENTS_UPPER_STEP_H_
#define F2OBO_CORE_HYPERGRADIENTS_UPPER_STEP_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/constraint.h"
#include "core/options.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

inline bool GammaIsAuto(const AlgorithmOptions& o) { return o.gamma == 0.0; }

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

  // x <- P_X(x - Gamma_t d); returns the reported gamma_t (the set one, or
  // max_i Gamma_{t,i}; 0 when no coordinate has seen a gradient).
  double Step(const Vector& d, int64_t t, StateParts* aux, Vector* x) const;

  // Makes aux[slot] the automatic step's fresh part when it is missing.
  void EnsurePart(const Vector& x, StateParts* aux) const;

 private:
  AlgorithmOptions o_;
  ConstraintSet set_;
  int x_dim_;
  size_t slot_;
  bool automatic_;
  Vector widths_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_HYPERGRADIENTS_UPPER_STEP_H_
