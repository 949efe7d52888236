#include "core/bilevel/families/ridge_hpo.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/bilevel/families/gram_bound.h"
#include "core/features.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<BilevelFamily>> RidgeHpoFamily::Create(const FamilyConfig& config) {
  if (config.features <= 0) {
    return absl::InvalidArgumentError("family.features: ridge_hpo needs d > 0");
  }
  if (!(config.mu0 > 0.0) || !std::isfinite(config.mu0)) {
    return absl::InvalidArgumentError("family.mu0: must be finite and > 0");
  }
  return std::unique_ptr<BilevelFamily>(new RidgeHpoFamily(config.features, config.mu0));
}

absl::Status RidgeHpoFamily::ValidateBatch(const Batch& b, BatchRole role) const {
  const char* what = role == BatchRole::kUpper ? "upper batch" : "inner batch";
  if (absl::Status s = ValidateFeatures(b, d_, what); !s.ok()) return s;
  return ValidateTargets(b, what);
}

absl::Status RidgeHpoFamily::ValidateConstraint(const ConstraintSet& set) const {
  for (int j = 0; j < d_; ++j) {
    if (!(set.LowerBound(j) + mu0_ > 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("constraint: ridge_hpo needs a box with lo > -mu0 (coordinate ", j,
                       ") so that g stays strongly convex in y"));
    }
  }
  return absl::OkStatus();
}

double RidgeHpoFamily::LeastSquares(const VecIn& y, const BatchView& view, Vector* gy) {
  const Batch& b = *view.batch;
  if (gy != nullptr) gy->setZero();
  double loss = 0.0;
  const double inv_n = 1.0 / view.rows.n;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    const double r = RowDot(b, i, y.data()) - b.targets[i];
    loss += r * r;
    if (gy != nullptr) RowAxpy(b, i, r * inv_n, gy->data());
  }
  return 0.5 * loss * inv_n;
}

void RidgeHpoFamily::Gram(const BatchView& view, const VecIn& v, Vector* out) {
  const Batch& b = *view.batch;
  out->setZero();
  const double inv_n = 1.0 / view.rows.n;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    RowAxpy(b, i, RowDot(b, i, v.data()) * inv_n, out->data());
  }
}

double RidgeHpoFamily::F(const VecIn&, const VecIn& y, const BatchView& upper, Vector* gx,
                         Vector* gy) {
  if (gx != nullptr) gx->setZero();
  return LeastSquares(y, upper, gy);
}

double RidgeHpoFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                         Vector* gy) {
  const double loss = LeastSquares(y, inner, gy);
  if (gy != nullptr) gy->array() += (x.array() + mu0_) * y.array();
  if (gx != nullptr) gx->array() = 0.5 * y.array().square();
  return loss + 0.5 * ((x.array() + mu0_) * y.array().square()).sum();
}

void RidgeHpoFamily::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2,
                                const BatchView& inner, Vector* gy1, Vector* gy2) {
  // One pass over the rows: each a_i is read once for both points.
  const Batch& b = *inner.batch;
  gy1->setZero();
  gy2->setZero();
  const double inv_n = 1.0 / inner.rows.n;
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    const double bi = b.targets[i];
    if (b.sparse_features) {
      RowAxpy(b, i, (RowDot(b, i, y1.data()) - bi) * inv_n, gy1->data());
      RowAxpy(b, i, (RowDot(b, i, y2.data()) - bi) * inv_n, gy2->data());
    } else {
      const auto a = b.dense.row(i).transpose();
      const double r1 = (a.dot(y1) - bi) * inv_n;
      const double r2 = (a.dot(y2) - bi) * inv_n;
      *gy1 += r1 * a;
      *gy2 += r2 * a;
    }
  }
  gy1->array() += (x.array() + mu0_) * y1.array();
  gy2->array() += (x.array() + mu0_) * y2.array();
}

void RidgeHpoFamily::HvpYYG(const VecIn& x, const VecIn&, const BatchView& inner, const VecIn& v,
                            Vector* out) {
  Gram(inner, v, out);
  out->array() += (x.array() + mu0_) * v.array();
}

void RidgeHpoFamily::HvpXYG(const VecIn&, const VecIn& y, const BatchView&, const VecIn& v,
                            Vector* out) {
  // d/dx_j of g is y_j^2 / 2, so the cross block is diag(y).
  out->array() = y.array() * v.array();
}

void RidgeHpoFamily::HvpYYF(const VecIn&, const VecIn&, const BatchView& upper, const VecIn& v,
                            Vector* out) {
  Gram(upper, v, out);
}

Smoothness RidgeHpoFamily::EstimateSmoothness(const VecIn& x, const VecIn&, const StepData& data) {
  // grad2_yy g = A^T A / n + diag(x + mu_0) and grad2_yy f = A_up^T A_up / m
  // do not depend on y: bound the Gram parts (gram_bound.h) and add the
  // diagonal's largest entry (Weyl).
  const BatchView inner = BatchView::All(data.inner), upper = BatchView::All(data.upper);
  Smoothness s;
  s.l_g1 = GramBound(inner, nullptr, false) / std::max(1, inner.rows.n) +
           (x.size() > 0 ? x.maxCoeff() : 0.0) + mu0_;
  s.l_f1 = GramBound(upper, nullptr, false) / std::max(1, upper.rows.n);
  s.source = SmoothnessSource::kBatchBound;
  return s;
}

}  // namespace f2obo
