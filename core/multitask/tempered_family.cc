#include "core/multitask/tempered_family.h"

#include <utility>

namespace f2obo {

TemperedFamily::TemperedFamily(std::unique_ptr<BilevelFamily> base, double sigma)
    : base_(std::move(base)),
      sigma_(sigma),
      inv_sigma_(1.0 / sigma),
      sigma2_(sigma * sigma),
      xs_(base_->x_dim()),
      ys_(base_->y_dim()),
      ys2_(base_->y_dim()) {}

void TemperedFamily::Rescale(const VecIn& x, const VecIn& y) {
  xs_.noalias() = sigma2_ * x;
  ys_.noalias() = inv_sigma_ * y;
}

double TemperedFamily::F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx,
                         Vector* gy) {
  Rescale(x, y);
  const double v = base_->F(xs_, ys_, upper, gx, gy);
  if (gx != nullptr) *gx *= sigma2_;
  if (gy != nullptr) *gy *= inv_sigma_;
  return v;
}

double TemperedFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                         Vector* gy) {
  Rescale(x, y);
  const double v = base_->G(xs_, ys_, inner, gx, gy);
  if (gx != nullptr) *gx *= sigma2_;
  if (gy != nullptr) *gy *= inv_sigma_;
  return v;
}

void TemperedFamily::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2,
                                const BatchView& inner, Vector* gy1, Vector* gy2) {
  Rescale(x, y1);
  ys2_.noalias() = inv_sigma_ * y2;
  base_->GradYGPair(xs_, ys_, ys2_, inner, gy1, gy2);
  *gy1 *= inv_sigma_;
  *gy2 *= inv_sigma_;
}

void TemperedFamily::InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y,
                                         const BatchView& upper, const BatchView& inner, Vector* gz,
                                         Vector* gy_g, Vector* gy_f) {
  Rescale(x, z);
  ys2_.noalias() = inv_sigma_ * y;
  base_->InnerIterationGrads(xs_, ys_, ys2_, upper, inner, gz, gy_g, gy_f);
  *gz *= inv_sigma_;
  *gy_g *= inv_sigma_;
  *gy_f *= inv_sigma_;
}

void TemperedFamily::HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z,
                                        const BatchView& upper, const BatchView& inner,
                                        Vector* gx_f, Vector* gy_f, Vector* gx_g_y, Vector* gy_g,
                                        Vector* gx_g_z, Vector* gz) {
  Rescale(x, y);
  ys2_.noalias() = inv_sigma_ * z;
  base_->HypergradientGrads(xs_, ys_, ys2_, upper, inner, gx_f, gy_f, gx_g_y, gy_g, gx_g_z, gz);
  for (Vector* gx : {gx_f, gx_g_y, gx_g_z}) {
    if (gx != nullptr) *gx *= sigma2_;
  }
  for (Vector* gy : {gy_f, gy_g, gz}) {
    if (gy != nullptr) *gy *= inv_sigma_;
  }
}

void TemperedFamily::HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
                            Vector* out) {
  Rescale(x, y);
  base_->HvpYYG(xs_, ys_, inner, v, out);
  *out *= inv_sigma_ * inv_sigma_;
}

void TemperedFamily::HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
                            Vector* out) {
  Rescale(x, y);
  base_->HvpXYG(xs_, ys_, inner, v, out);
  *out *= sigma_;
}

void TemperedFamily::HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
                            Vector* out) {
  Rescale(x, y);
  base_->HvpYYF(xs_, ys_, upper, v, out);
  *out *= inv_sigma_ * inv_sigma_;
}

std::optional<double> TemperedFamily::Accuracy(const VecIn& x, const VecIn& y,
                                               const BatchView& upper) {
  Rescale(x, y);
  return base_->Accuracy(xs_, ys_, upper);
}

Smoothness TemperedFamily::EstimateSmoothness(const VecIn& x, const VecIn& y,
                                              const StepData& data) {
  Rescale(x, y);
  Smoothness s = base_->EstimateSmoothness(xs_, ys_, data);
  s.l_g1 /= sigma2_;  // grad2_yy = grad2_yy b / s^2, f's and g's alike
  s.l_f1 /= sigma2_;
  return s;
}

}  // namespace f2obo
