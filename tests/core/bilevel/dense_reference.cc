#include "tests/core/bilevel/dense_reference.h"

#include <Eigen/Cholesky>
#include <cmath>

namespace f2obo::testing {
namespace {

Vector GradYG(BilevelFamily& family, const VecIn& x, const VecIn& y, const BatchView& inner) {
  Vector g(family.y_dim());
  family.G(x, y, inner, nullptr, &g);
  return g;
}

// argmin over s > 0 of g(y + s p) for a descent direction p: the root of
// phi'(s) = grad_y g(y + s p) . p, increasing in s because g is convex,
// bracketed by doubling and then bisected.
double ExactLineSearch(BilevelFamily& family, const VecIn& x, const BatchView& inner,
                       const Vector& y, const Vector& p) {
  const auto slope = [&](double s) { return GradYG(family, x, y + s * p, inner).dot(p); };
  double lo = 0.0, hi = 1.0;
  for (int i = 0; i < 60 && slope(hi) < 0.0; ++i) lo = hi, hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (slope(mid) < 0.0 ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

Matrix ExplicitHessianYY(BilevelFamily& family, const VecIn& x, const VecIn& y,
                         const BatchView& inner) {
  const int n = family.y_dim();
  Matrix h(n, n);
  Vector e = Vector::Zero(n), col(n);
  for (int k = 0; k < n; ++k) {
    e[k] = 1.0;
    family.HvpYYG(x, y, inner, e, &col);
    h.col(k) = col;
    e[k] = 0.0;
  }
  return 0.5 * (h + h.transpose());
}

Matrix ExplicitCrossXY(BilevelFamily& family, const VecIn& x, const VecIn& y,
                       const BatchView& inner) {
  const int n = family.y_dim();
  Matrix b(family.x_dim(), n);
  Vector e = Vector::Zero(n), col(family.x_dim());
  for (int k = 0; k < n; ++k) {
    e[k] = 1.0;
    family.HvpXYG(x, y, inner, e, &col);
    b.col(k) = col;
    e[k] = 0.0;
  }
  return b;
}

DenseSolution DenseSolve(BilevelFamily& family, const VecIn& x, const StepData& data,
                         const VecIn& start, double tolerance) {
  const BatchView inner = BatchView::All(data.inner);
  DenseSolution out;
  out.y = start;
  Vector grad = GradYG(family, x, out.y, inner);
  while (grad.norm() > tolerance && out.iterations < 200) {
    const Vector p = -ExplicitHessianYY(family, x, out.y, inner).ldlt().solve(grad);
    // The full Newton step once it halves the residual (the quadratic
    // regime, where g's decrease drowns in round-off); else the exact line
    // search, which converges from anywhere for strongly convex g.
    Vector trial = out.y + p;
    Vector trial_grad = GradYG(family, x, trial, inner);
    if (!(trial_grad.norm() <= 0.5 * grad.norm())) {
      trial = out.y + ExactLineSearch(family, x, inner, out.y, p) * p;
      trial_grad = GradYG(family, x, trial, inner);
    }
    out.y = trial;
    grad = trial_grad;
    ++out.iterations;
  }
  out.residual = grad.norm();
  Vector gx_f(family.x_dim()), gy_f(family.y_dim());
  out.value = family.F(x, out.y, BatchView::All(data.upper), &gx_f, &gy_f);
  const Vector w = ExplicitHessianYY(family, x, out.y, inner).ldlt().solve(gy_f);
  out.grad = gx_f - ExplicitCrossXY(family, x, out.y, inner) * w;
  return out;
}

}  // namespace f2obo::testing
