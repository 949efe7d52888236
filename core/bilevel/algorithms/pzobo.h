// PZOBO and PZOBO-S, the Hessian-free (partial zeroth-order) bilevel
// methods of Sow, Ji & Liang: the response Jacobian is estimated from Q
// perturbed inner GD paths that share their start point and mini-batches.
// The update and the choices made are written down in pzobo.cc.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_PZOBO_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_PZOBO_H_

#include <cstdint>

#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/bilevel/bilevel_family.h"
#include "core/rng.h"
#include "core/round_control.h"
#include "core/types.h"

namespace f2obo {

// ctx.name "pzobo" (full inner batch) or "pzobo_s" (mini-batches).
const BilevelAlgorithmEntry& PzoboAlgorithm();
const BilevelAlgorithmEntry& PzoboSAlgorithm();

// A stream of independent standard normal numbers from a seed (Box-Muller
// on xoshiro256** doubles; every value is a function of the seed alone).
// A round's directions u_1, u_2, ... are consecutive Next() calls on
// GaussianDirections(round_seed), round_seed = the round's first
// state.rng.Next().
class GaussianDirections {
 public:
  explicit GaussianDirections(uint64_t seed) : rng_(seed) {}
  // Fills u (already sized) with the next u->size() normals.
  void Next(Vector* u);

 private:
  double Normal();
  Rng rng_;
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// The inner GD paths of one round, with scratch sized once (no heap
// allocation per call).
class InnerPaths {
 public:
  InnerPaths(int d1, int d2) : xp_(d1), yp_(d2), grad_(d2) {}

  // y^{k+1} = y^k - alpha grad_y g(x, y^k; views[k]), k = 0..n-1; *y holds
  // y^0 on entry and y^n on return.  `control` (may be null) can stop the
  // path between two steps; its status is returned then.
  absl::Status Run(BilevelFamily& family, const VecIn& x, double alpha, const BatchView* views,
                   int n, Vector* y, RoundControl* control = nullptr);

  // delta = (y^n(x + mu u) - y_n) / mu, where the perturbed path starts at
  // y0 and runs over the same views as the unperturbed path that produced
  // y_n = y^n(x) (common random numbers).
  absl::Status Delta(BilevelFamily& family, const VecIn& x, const VecIn& u, double mu, double alpha,
                     const VecIn& y0, const VecIn& y_n, const BatchView* views, int n,
                     Vector* delta, RoundControl* control = nullptr);

 private:
  Vector xp_, yp_, grad_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_PZOBO_H_
