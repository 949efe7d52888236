#include "core/bilevel/families/quadratic.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<BilevelFamily>> QuadraticFamily::Create(const FamilyConfig& config) {
  if (config.x_dim <= 0 || config.y_dim <= 0) {
    return absl::InvalidArgumentError(
        "family.x_dim, family.y_dim: quadratic needs d1 > 0 and d2 > 0");
  }
  if (!(config.mu > 0.0) || !std::isfinite(config.mu)) {
    return absl::InvalidArgumentError("family.mu: must be finite and > 0 (g strongly convex in y)");
  }
  if (config.bump_upper && !std::isfinite(config.bump_scale)) {
    return absl::InvalidArgumentError("family.bump_scale: must be finite");
  }
  return std::unique_ptr<BilevelFamily>(new QuadraticFamily(config.x_dim, config.y_dim, config.mu,
                                                            config.bump_upper, config.bump_scale));
}

absl::Status QuadraticFamily::ValidateBatch(const Batch& b, BatchRole role) const {
  if (role == BatchRole::kInner) {
    if (b.M.rows() != d2_ || b.M.cols() != d1_) {
      return absl::InvalidArgumentError(absl::StrCat("inner batch: M is ", b.M.rows(), " x ",
                                                     b.M.cols(), ", expected d2 x d1 = ", d2_,
                                                     " x ", d1_));
    }
    if (b.c.size() != d2_) {
      return absl::InvalidArgumentError(
          absl::StrCat("inner batch: c has ", b.c.size(), " entries, expected d2 = ", d2_));
    }
    for (Eigen::Index j = 0; j < b.M.cols(); ++j) {
      for (Eigen::Index i = 0; i < b.M.rows(); ++i) {
        if (!InputNumberOk(b.M(i, j))) {
          return absl::InvalidArgumentError(
              absl::StrCat("inner batch: M(", i, ", ", j, ") ", InputNumberProblem(b.M(i, j))));
        }
      }
    }
    if (absl::Status s = CheckInputNumbers(b.c.data(), b.c.size(), "inner batch: c"); !s.ok()) {
      return s;
    }
    // Products of inputs alone: grad_y g = mu r and grad_x g = -mu M^T r
    // with r = y - M x - c (G, HvpXYG above) form mu c, mu M and mu M^T c,
    // which inputs each within kMaxInputMagnitude can still overflow (three
    // factors, summed over d2).  Bounding mu max(1, |M|) max(1, |c|) by
    // kMaxInputMagnitude keeps each of them within it, so g = (mu/2)||r||^2
    // and M^T r (sums over d2 of products of two such numbers) stay finite.
    // The parts that depend on the state (M x, y) are bounded by the
    // round's magnitude check on the state, not here.
    const double m_max = b.M.cwiseAbs().maxCoeff();
    const double c_max = b.c.cwiseAbs().maxCoeff();
    const double product = mu_ * std::max(1.0, m_max) * std::max(1.0, c_max);
    if (!(product <= kMaxInputMagnitude)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "inner batch: family.mu * max(1, max|M|) * max(1, max|c|) = ", product,
          " is beyond the bound ", kMaxInputMagnitude, " on products of inputs (mu = ", mu_,
          ", max|M| = ", m_max, ", max|c| = ", c_max, ")"));
    }
    return absl::OkStatus();
  }
  if (bump_) return absl::OkStatus();  // the bump f reads no data
  if (b.d.size() != d2_) {
    return absl::InvalidArgumentError(
        absl::StrCat("upper batch: d has ", b.d.size(), " entries, expected d2 = ", d2_));
  }
  // f = (1/2)||y - d||^2 forms no product of inputs.
  return CheckInputNumbers(b.d.data(), b.d.size(), "upper batch: d");
}

void QuadraticFamily::Prepare(const StepData&) { mxc_m_ = mxc_c_ = nullptr; }

void QuadraticFamily::Residual(const VecIn& x, const VecIn& y, const Batch& inner) {
  // r = y - (M x + c), in this order: at y = M x + c computed the same way
  // the residual is exactly 0 whether or not the build contracts to FMAs.
  const bool same_x = mxc_x_.size() == x.size() &&
                      std::memcmp(mxc_x_.data(), x.data(), sizeof(double) * x.size()) == 0;
  if (mxc_m_ != inner.M.data() || mxc_c_ != inner.c.data() || !same_x) {
    mxc_.noalias() = inner.M * x;
    mxc_ += inner.c;
    mxc_x_ = x;
    mxc_m_ = inner.M.data();
    mxc_c_ = inner.c.data();
  }
  r_ = y - mxc_;
}

double QuadraticFamily::F(const VecIn&, const VecIn& y, const BatchView& upper, Vector* gx,
                          Vector* gy) {
  if (gx != nullptr) gx->setZero();
  if (bump_) {
    const double e = scale_ * std::exp(-y.squaredNorm());
    if (gy != nullptr) gy->noalias() = (-2.0 * e) * y;
    return e;
  }
  const Vector& d = upper.batch->d;
  if (gy != nullptr) gy->noalias() = y - d;
  return 0.5 * (y - d).squaredNorm();
}

double QuadraticFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                          Vector* gy) {
  Residual(x, y, *inner.batch);
  if (gy != nullptr) gy->noalias() = mu_ * r_;
  if (gx != nullptr) gx->noalias() = -mu_ * (inner.batch->M.transpose() * r_);
  return 0.5 * mu_ * r_.squaredNorm();
}

void QuadraticFamily::HvpYYG(const VecIn&, const VecIn&, const BatchView&, const VecIn& v,
                             Vector* out) {
  out->noalias() = mu_ * v;
}

void QuadraticFamily::HvpXYG(const VecIn&, const VecIn&, const BatchView& inner, const VecIn& v,
                             Vector* out) {
  // grad_x g = -mu M^T r with dr/dy = I, so the cross block is -mu M^T.
  out->noalias() = -mu_ * (inner.batch->M.transpose() * v);
}

void QuadraticFamily::HvpYYF(const VecIn&, const VecIn& y, const BatchView&, const VecIn& v,
                             Vector* out) {
  if (!bump_) {
    *out = v;
    return;
  }
  // Hessian of s exp(-||y||^2) is s e^{-||y||^2} (4 y y^T - 2 I).
  const double e = scale_ * std::exp(-y.squaredNorm());
  out->noalias() = (4.0 * e * y.dot(v)) * y - (2.0 * e) * v;
}

Smoothness QuadraticFamily::EstimateSmoothness(const VecIn&, const VecIn&, const StepData&) {
  // Exact for g; for the bump, ||s e^{-r^2}(4yy^T - 2I)|| <= 2|s| for all y
  // (max over r of |4r^2 - 2| e^{-r^2} is 2, at r = 0).
  return Smoothness{mu_, bump_ ? 2.0 * std::abs(scale_) : 1.0, SmoothnessSource::kExact};
}

}  // namespace f2obo
