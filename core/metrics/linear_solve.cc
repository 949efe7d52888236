#include "core/metrics/linear_solve.h"

#include <cmath>

namespace f2obo {

namespace {

// CG from the w and r = b - A w given, to ||r|| <= rel_tol ||b||.
int Iterate(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it, Vector* w,
            Vector r, CgOutcome* outcome) {
  const int n = static_cast<int>(b.size());
  Vector p = r, ap(n);
  const double bb = b.squaredNorm();
  double rr = r.squaredNorm();
  const double target = rel_tol * rel_tol * bb;
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
    // rr <= target is the loop's own exit test; b = 0 is solved by w = 0
    // (a warm start never runs with b = 0: its residual is not below ||b||).
    outcome->converged = bb == 0.0 || rr <= target;
  }
  return it;
}

}  // namespace

int ConjugateGradient(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it,
                      Vector* w, CgOutcome* outcome) {
  w->setZero(b.size());
  return Iterate(apply, b, rel_tol, max_it, w, b, outcome);
}

int ConjugateGradientFrom(const LinearOperator& apply, const Vector& b, double rel_tol, int max_it,
                          Vector* w, CgOutcome* outcome) {
  if (w->size() != b.size() || !w->allFinite()) {
    return ConjugateGradient(apply, b, rel_tol, max_it, w, outcome);
  }
  Vector r(b.size());
  apply(*w, &r);
  r = b - r;
  // A guess worse than w = 0 (a residual above ||b||: the system moved
  // far) is dropped, so a warm start never costs more than a cold one
  // beyond this product.
  if (!(r.squaredNorm() < b.squaredNorm())) {
    return ConjugateGradient(apply, b, rel_tol, max_it, w, outcome);
  }
  return Iterate(apply, b, rel_tol, max_it, w, std::move(r), outcome);
}

}  // namespace f2obo
