#include "core/family.h"

#include <algorithm>

namespace f2obo {
namespace {

// Largest eigenvalue of a symmetric PSD operator by power iteration.  A
// handful of iterations from a fixed start underestimates lambda_max, so the
// caller scales the result up; deterministic so that rounds stay reproducible.
template <typename Apply>
double PowerIteration(int n, Apply apply) {
  constexpr int kIterations = 30;
  Vector v = Vector::Constant(n, 1.0 / std::sqrt(static_cast<double>(n)));
  // Break symmetry so a start orthogonal to the top eigenvector is unlikely.
  for (int i = 0; i < n; ++i) v[i] *= 1.0 + 0.01 * (i % 7);
  v.normalize();
  Vector w(n);
  double estimate = 0.0;
  for (int it = 0; it < kIterations; ++it) {
    apply(v, &w);
    const double norm = w.norm();
    if (!(norm > 0.0)) return 0.0;
    estimate = v.dot(w);
    v = w / norm;
  }
  return std::max(estimate, 0.0);
}

}  // namespace

void Family::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                        Vector* gy1, Vector* gy2) {
  G(x, y1, inner, nullptr, gy1);
  G(x, y2, inner, nullptr, gy2);
}

void Family::InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y,
                                 const BatchView& upper, const BatchView& inner, Vector* gz,
                                 Vector* gy_g, Vector* gy_f) {
  GradYGPair(x, z, y, inner, gz, gy_g);
  F(x, y, upper, nullptr, gy_f);
}

void Family::HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z,
                                const BatchView& upper, const BatchView& inner, Vector* gx_f,
                                Vector* gy_f, Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z,
                                Vector* gz) {
  F(x, y, upper, gx_f, gy_f);
  G(x, y, inner, gx_g_y, gy_g);
  G(x, z, inner, gx_g_z, gz);
}

void Family::InnerIterationDirection(const VecIn& x, const VecIn& z, const VecIn& y,
                                     double lambda, const BatchView& upper,
                                     const BatchView& inner, Vector* gz, Vector* gy_g, Vector* d) {
  InnerIterationGrads(x, z, y, upper, inner, gz, gy_g, d);
  *d += lambda * *gy_g;
}

void Family::HypergradientDirection(const VecIn& x, const VecIn& y, const VecIn& z, double lambda,
                                    const BatchView& upper, const BatchView& inner, Vector* gx_f,
                                    Vector* gy_l, Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z,
                                    Vector* gz) {
  HypergradientGrads(x, y, z, upper, inner, gx_f, gy_l, gx_g_y, gy_g, gx_g_z, gz);
  *gy_l += lambda * *gy_g;
}

Smoothness Family::EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) {
  constexpr double kSafety = 1.1;
  const BatchView upper = BatchView::All(data.upper);
  const BatchView inner = BatchView::All(data.inner);
  Smoothness s;
  s.l_g1 = kSafety * PowerIteration(y_dim(), [&](const Vector& v, Vector* out) {
             HvpYYG(x, y, inner, v, out);
           });
  // f need not be convex: bound |eigenvalues| through the spectrum of H^2.
  Vector tmp(y_dim());
  const double sq = PowerIteration(y_dim(), [&](const Vector& v, Vector* out) {
    HvpYYF(x, y, upper, v, &tmp);
    HvpYYF(x, y, upper, tmp, out);
  });
  s.l_f1 = kSafety * std::sqrt(sq);
  s.source = SmoothnessSource::kPowerIteration;
  return s;
}

}  // namespace f2obo
