// Conjugate gradient on a symmetric positive definite operator given as a
// function (an HVP), for the metrics' Newton and hypergradient systems.
#ifndef F2OBO_CORE_METRICS_LINEAR_SOLVE_H_
#define F2OBO_CORE_METRICS_LINEAR_SOLVE_H_

#include <cmath>
#include <functional>

#include "core/types.h"

namespace f2obo {

using LinearOperator = std::function<void(const Vector& v, Vector* out)>;

// How a CG solve ended.  The residual is CG's recursively updated one (the
// quantity the stopping test reads), so `converged` and `relative_residual`
// agree; it tracks the true ||A w - b|| to round-off.
struct CgOutcome {
  int iterations = 0;
  double relative_residual = 0.0;  // ||r|| / ||b||; 0 when b = 0
  bool converged = false;          // relative_residual <= rel_tol
};

// Solves A w = b from w = 0 until ||A w - b|| <= rel_tol ||b|| or max_it
// iterations (or A is found not positive definite along a direction);
// returns the iterations used.  `w` is resized to b's size.  If `outcome`
// is not null it receives how the solve ended.
int ConjugateGradient(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it,
                      Vector* w, CgOutcome* outcome = nullptr);

// The same from the initial guess in `w` (a warm start: the previous
// step's solution of a nearby system), to the same test ||A w - b|| <=
// rel_tol ||b||, so the answer meets the same tolerance.  A guess of
// another size, not finite, or whose residual is not below ||b|| (no
// better than w = 0) is dropped for w = 0.  Costs one product more than
// the cold solve to read the guess's residual.
int ConjugateGradientFrom(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it,
                          Vector* w, CgOutcome* outcome = nullptr);

}  // namespace f2obo

#endif  // F2OBO_CORE_METRICS_LINEAR_SOLVE_H_
