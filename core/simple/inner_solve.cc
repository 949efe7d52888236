#include "core/simple/inner_solve.h"

#include <algorithm>
#include <cmath>

namespace f2obo {
namespace {

// See the stall test in MinimizeG.
constexpr double kStalledTolerance = 1e-6;

}  // namespace

double FrankWolfeGap(const ConstraintSet& z, const VecIn& x, const VecIn& grad, Vector* s) {
  z.Lmo(grad, s);
  return grad.dot(x - *s);
}

InnerSolveResult MinimizeG(SimpleFamily& family, const BatchView& inner, const ConstraintSet& set,
                           const VecIn& start, const InnerSolveOptions& options) {
  const bool bounded = set.HasLmo();
  // The family's bound may be loose (e.g. ||A||_F^2 / n); it is a valid
  // step 1/L for projected gradient, which is all FISTA's rate needs.
  const double lipschitz = std::max(family.SmoothnessG(inner), 1e-12);
  InnerSolveResult r;
  r.z = start;
  set.Project(&r.z);
  Vector grad, s, w = r.z, next, previous = r.z;
  r.g = family.G(r.z, inner, &grad);
  const double scale = 1.0 + grad.norm();
  double momentum = 1.0;
  for (r.iterations = 0; r.iterations < options.max_iterations; ++r.iterations) {
    // Stop test at the current best point z.
    if (bounded) {
      r.certificate = FrankWolfeGap(set, r.z, grad, &s);
      if (r.certificate <= options.tolerance * (1.0 + std::abs(r.g))) {
        r.converged = true;
        break;
      }
    }
    // Projected gradient step from the extrapolated point w.
    Vector grad_w;
    family.G(w, inner, &grad_w);
    next = w - grad_w / lipschitz;
    set.Project(&next);
    if (!bounded) {
      r.certificate = lipschitz * (w - next).norm();
      if (r.certificate <= options.tolerance * scale) {
        r.z = next;
        r.g = family.G(r.z, inner, &grad);
        r.converged = true;
        break;
      }
    }
    const double g_next = family.G(next, inner, &grad_w);
    if (g_next > r.g) {
      if (momentum == 1.0) {
        // A plain projected-gradient step from z (the descent lemma's step)
        // no longer lowers g: z is optimal to rounding.  The certificates
        // are linear in the distance to the solution while g's gap is
        // quadratic, so they stall near sqrt(eps) of the scale: accept
        // the point if they are that small.
        if (!bounded) r.certificate = lipschitz * (r.z - next).norm();
        r.converged = r.certificate <= kStalledTolerance * (bounded ? 1.0 + std::abs(r.g) : scale);
        break;
      }
      // Function-value restart: drop the momentum, step again from z.
      momentum = 1.0;
      w = r.z;
      continue;
    }
    previous = r.z;
    r.z = next;
    r.g = g_next;
    grad = grad_w;
    const double momentum_next = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * momentum * momentum));
    w = r.z + ((momentum - 1.0) / momentum_next) * (r.z - previous);
    momentum = momentum_next;
  }
  return r;
}

}  // namespace f2obo
