#include "core/metrics/linear_solve.h"

#include <cmath>

namespace f2obo {

int ConjugateGradient(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it,
                      Vector* w, CgOutcome* outcome) {
  const int n = static_cast<int>(b.size());
  w->setZero(n);
  Vector r = b, p = b, ap(n);
  const double bb = r.squaredNorm();
  double rr = bb;
  const double target = rel_tol * rel_tol * rr;
  int it = 0;
  while (it < max_it && rr > target && rr > 0.0) {
    apply(p, &ap);
    const double pap = p.dot(ap);
    if (!(pap > 0.0)) break;  // not positive definite along p: stop safely
    const double a = rr / pap;
    *w += a * p;
    r -= a * ap;
    const double rr_next = r.squaredNorm();
    p = r + (rr_next / rr) * p;
    rr = rr_next;
    ++it;
  }
  if (outcome != nullptr) {
    outcome->iterations = it;
    outcome->relative_residual = bb > 0.0 ? std::sqrt(rr / bb) : 0.0;
    // rr <= target is the loop's own exit test; b = 0 is solved by w = 0.
    outcome->converged = bb == 0.0 || rr <= target;
  }
  return it;
}

}  // namespace f2obo
