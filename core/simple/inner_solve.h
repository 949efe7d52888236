// g* = min_{z in Z} g(z) on a fixed set of rows, accurately: the reference
// the simple bilevel class's metrics measure the inner gap against
// (SPEC section 9.2).  Off the request path.
#ifndef F2OBO_CORE_SIMPLE_INNER_SOLVE_H_
#define F2OBO_CORE_SIMPLE_INNER_SOLVE_H_

#include "core/batch.h"
#include "core/constraint.h"
#include "core/simple/simple_family.h"
#include "core/types.h"

namespace f2obo {

struct InnerSolveResult {
  Vector z;        // the best point found (in Z)
  double g = 0.0;  // g(z)
  bool converged = false;
  int iterations = 0;
  // The stop test's measure at z: the Frank-Wolfe gap (an upper bound on
  // g(z) - g*) when Z has an LMO, else the gradient-mapping norm.
  double certificate = 0.0;
};

struct InnerSolveOptions {
  int max_iterations = 5000;
  // Stop when the Frank-Wolfe gap <= tolerance (1 + |g(z)|) (Z with an
  // LMO), or the gradient-mapping norm <= tolerance (1 + ||grad g(start)||)
  // (unbounded Z).
  double tolerance = 1e-10;
};

// FISTA (Beck & Teboulle) with step 1/L_g from the family's bound and
// function-value restarts (O'Donoghue & Candes), from `start` projected
// onto Z.  It also stops when a plain projected-gradient step no longer
// lowers g (optimal to rounding), converged if the certificate is then
// within 1e-6 of the scale.  `converged` is false when the iteration cap
// stops it first, or when it stalls with a larger certificate.
InnerSolveResult MinimizeG(SimpleFamily& family, const BatchView& inner, const ConstraintSet& z,
                           const VecIn& start, const InnerSolveOptions& options = {});

// The Frank-Wolfe gap max_{s in Z} <grad, x - s> (Z must have an LMO);
// `s` is scratch.
double FrankWolfeGap(const ConstraintSet& z, const VecIn& x, const VecIn& grad, Vector* s);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_INNER_SOLVE_H_
