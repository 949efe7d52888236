#include "core/bilevel/families/logistic_hpo.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/bilevel/families/gram_bound.h"
#include "core/kernels/small_gemm.h"
#include "core/kernels/softmax.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<BilevelFamily>> LogisticHpoFamily::Create(
    const FamilyConfig& config) {
  if (absl::Status s = ValidateSoftmaxConfig(config, "logistic_hpo"); !s.ok()) return s;
  return std::unique_ptr<BilevelFamily>(
      new LogisticHpoFamily(config.features, config.classes, config.mu0));
}

absl::Status LogisticHpoFamily::ValidateBatch(const Batch& b, BatchRole role) const {
  const char* what = role == BatchRole::kUpper ? "upper batch" : "inner batch";
  if (absl::Status s = ValidateFeatures(b, d_, what); !s.ok()) return s;
  return ValidateLabels(b, c_, what);
}

absl::Status LogisticHpoFamily::ValidateConstraint(const ConstraintSet& set) const {
  for (int j = 0; j < d_; ++j) {
    if (!(set.LowerBound(j) + mu0_ > 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("constraint: logistic_hpo needs a box with lo > -mu0 (coordinate ", j,
                       ") so that g stays strongly convex in y"));
    }
  }
  return absl::OkStatus();
}

double LogisticHpoFamily::CrossEntropy(const VecIn& y, const BatchView& view, Vector* gy,
                                       bool value) {
  const Batch& b = *view.batch;
  if (!b.sparse_features) return DenseCrossEntropy(y, view, gy, value || gy == nullptr);
  if (gy != nullptr) gy->setZero();
  const double inv_n = InverseRows(view);
  double* z = z_.data();
  double loss = 0.0;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    const int l = b.labels[i];
    Logits(b, i, y.data(), d_, c_, z);
    if (gy == nullptr) {
      loss += SoftmaxCrossEntropy(z, c_, l);
      continue;
    }
    loss += SoftmaxInPlace(z, c_, value ? l : -1);
    z[l] -= 1.0;  // r = p - e_l
    for (int j = 0; j < c_; ++j) z[j] *= inv_n;
    BackProject(b, i, z, d_, c_, gy->data());
  }
  return loss * inv_n;
}

void LogisticHpoFamily::CrossEntropyHvp(const VecIn& y, const BatchView& view, const VecIn& v,
                                        Vector* out) {
  const Batch& b = *view.batch;
  if (!b.sparse_features) return DenseCrossEntropyHvp(y, view, v, out);
  out->setZero();
  const double inv_n = InverseRows(view);
  double* p = z_.data();
  double* dz = dz_.data();
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    Logits(b, i, y.data(), d_, c_, p);
    SoftmaxInPlace(p, c_);
    Logits(b, i, v.data(), d_, c_, dz);  // dz = V^T a_i + v_b
    SoftmaxHvp(p, dz, c_, dz);
    for (int j = 0; j < c_; ++j) dz[j] *= inv_n;
    BackProject(b, i, dz, d_, c_, out->data());
  }
}

void LogisticHpoFamily::AddRegularizer(const VecIn& x, const VecIn& y, Vector* gy) const {
  double* g = gy->data();
  const double* w = y.data();
  const int n = y_dim();
  for (int k = 0; k < n; ++k) g[k] += mu0_ * w[k];
  for (int f = 0; f < d_; ++f) {
    const size_t off = static_cast<size_t>(f) * c_;
    for (int j = 0; j < c_; ++j) g[off + j] += x[f] * w[off + j];
  }
}

double LogisticHpoFamily::F(const VecIn&, const VecIn& y, const BatchView& upper, Vector* gx,
                            Vector* gy) {
  if (gx != nullptr) gx->setZero();
  return CrossEntropy(y, upper, gy);
}

double LogisticHpoFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                            Vector* gy) {
  const double loss = CrossEntropy(y, inner, gy);
  if (gy != nullptr) AddRegularizer(x, y, gy);
  double row_penalty = 0.0;
  for (int f = 0; f < d_; ++f) {
    const double sq = y.segment(static_cast<Eigen::Index>(f) * c_, c_).squaredNorm();
    if (gx != nullptr) (*gx)[f] = 0.5 * sq;
    row_penalty += x[f] * sq;
  }
  return loss + 0.5 * mu0_ * y.squaredNorm() + 0.5 * row_penalty;
}

void LogisticHpoFamily::GradG(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                              Vector* gy) {
  if (inner.batch->sparse_features) {
    CrossEntropy(y, inner, gy, /*value=*/false);
    AddRegularizer(x, y, gy);
  } else {
    DenseCrossEntropy(y, inner, gy, /*value=*/false, &x);
  }
  RowNorms(y, gx);
}

void LogisticHpoFamily::RowNorms(const VecIn& y, Vector* gx) const {
  for (int f = 0; gx != nullptr && f < d_; ++f) {
    (*gx)[f] = 0.5 * y.segment(static_cast<Eigen::Index>(f) * c_, c_).squaredNorm();
  }
}

void LogisticHpoFamily::InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y,
                                            const BatchView& upper, const BatchView& inner,
                                            Vector* gz, Vector* gy_g, Vector* gy_f) {
  GradYGPair(x, z, y, inner, gz, gy_g);
  CrossEntropy(y, upper, gy_f, /*value=*/false);
}

void LogisticHpoFamily::HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z,
                                           const BatchView& upper, const BatchView& inner,
                                           Vector* gx_f, Vector* gy_f, Vector* gx_g_y, Vector* gy_g,
                                           Vector* gx_g_z, Vector* gz) {
  if (gx_f != nullptr) gx_f->setZero();
  CrossEntropy(y, upper, gy_f, /*value=*/false);
  if (inner.batch->sparse_features || !SmallProductShape(inner.rows.n, d_, 2 * c_)) {
    GradG(x, y, inner, gx_g_y, gy_g);
    GradG(x, z, inner, gx_g_z, gz);
    return;
  }
  // Small dense shapes: both points in one pass (DenseGradYGPair computes
  // each gradient exactly as DenseCrossEntropy does at these shapes).
  DenseGradYGPair(y, z, inner, gy_g, gz, &x);
  RowNorms(y, gx_g_y);
  RowNorms(z, gx_g_z);
}

void LogisticHpoFamily::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2,
                                   const BatchView& inner, Vector* gy1, Vector* gy2) {
  // One pass over the rows: each a_i is read once for the logits of both
  // points and once more for both back-projections.
  const Batch& b = *inner.batch;
  if (!b.sparse_features) return DenseGradYGPair(y1, y2, inner, gy1, gy2, &x);
  gy1->setZero();
  gy2->setZero();
  const double inv_n = InverseRows(inner);
  double* z1 = z_.data();
  double* z2 = z2_.data();
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    const int l = b.labels[i];
    LogitsPair(b, i, y1.data(), y2.data(), d_, c_, z1, z2);
    SoftmaxInPlace(z1, c_);
    SoftmaxInPlace(z2, c_);
    z1[l] -= 1.0;
    z2[l] -= 1.0;
    for (int j = 0; j < c_; ++j) {
      z1[j] *= inv_n;
      z2[j] *= inv_n;
    }
    BackProjectPair(b, i, z1, z2, d_, c_, gy1->data(), gy2->data());
  }
  AddRegularizer(x, y1, gy1);
  AddRegularizer(x, y2, gy2);
}

void LogisticHpoFamily::HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner,
                               const VecIn& v, Vector* out) {
  CrossEntropyHvp(y, inner, v, out);
  AddRegularizer(x, v, out);  // linear in its second argument
}

void LogisticHpoFamily::HvpXYG(const VecIn&, const VecIn& y, const BatchView&, const VecIn& v,
                               Vector* out) {
  // d/dx_i of g is ||W_i||^2 / 2, whose derivative along v is W_i . V_i.
  for (int f = 0; f < d_; ++f) {
    const Eigen::Index off = static_cast<Eigen::Index>(f) * c_;
    (*out)[f] = y.segment(off, c_).dot(v.segment(off, c_));
  }
}

void LogisticHpoFamily::HvpYYF(const VecIn&, const VecIn& y, const BatchView& upper, const VecIn& v,
                               Vector* out) {
  CrossEntropyHvp(y, upper, v, out);
}

double LogisticHpoFamily::CurvatureBound(const VecIn& y, const BatchView& view) {
  const Batch& b = *view.batch;
  if (weights_.size() < view.rows.n) weights_.resize(view.rows.n);
  if (!b.sparse_features) {
    Eigen::Map<RowMatrix> z = DenseLogits(DenseRows(view), TransposedRows(view), y);
    for (int k = 0; k < view.rows.n; ++k) {
      SoftmaxInPlace(z.row(k).data(), c_);
      weights_[k] = SoftmaxCurvatureBound(z.row(k).data(), c_);
    }
  } else {
    double* p = z_.data();
    for (int k = 0; k < view.rows.n; ++k) {
      Logits(b, view.rows.row(k), y.data(), d_, c_, p);
      SoftmaxInPlace(p, c_);
      weights_[k] = SoftmaxCurvatureBound(p, c_);
    }
  }
  return GramBound(view, weights_.data(), /*augmented=*/true) * InverseRows(view);
}

Smoothness LogisticHpoFamily::EstimateSmoothness(const VecIn& x, const VecIn& y,
                                                 const StepData& data) {
  // grad2_yy g = (1/n) sum J_i^T H_i J_i + mu_0 I + diag(x_f on W_f, 0 on b).
  // With ||H_i|| <= h_i (softmax.h) the cross-entropy part is at most
  // (1/n) lambda_max(sum_i h_i a~_i a~_i^T) (gram_bound.h; a~_i = (a_i, 1)),
  // and the regularizer adds mu_0 + max(0, max_f x_f) (Weyl).  f is convex,
  // so its bound is that of its cross-entropy.  One forward pass per batch,
  // against the 90 HVPs of the default power iteration.
  Smoothness s;
  s.l_g1 = CurvatureBound(y, BatchView::All(data.inner)) + mu0_ +
           std::max(0.0, x.size() > 0 ? x.maxCoeff() : 0.0);
  s.l_f1 = CurvatureBound(y, BatchView::All(data.upper));
  s.source = SmoothnessSource::kBatchBound;
  return s;
}

std::optional<double> LogisticHpoFamily::Accuracy(const VecIn&, const VecIn& y,
                                                  const BatchView& upper) {
  const Batch& b = *upper.batch;
  double* z = z_.data();
  int correct = 0;
  if (!b.sparse_features) {
    const Eigen::Map<RowMatrix> logits = DenseLogits(DenseRows(upper), TransposedRows(upper), y);
    for (int k = 0; k < upper.rows.n; ++k) {
      if (ArgMax(logits.row(k).data(), c_) == b.labels[upper.rows.row(k)]) ++correct;
    }
    return correct * InverseRows(upper);
  }
  for (int k = 0; k < upper.rows.n; ++k) {
    const int i = upper.rows.row(k);
    Logits(b, i, y.data(), d_, c_, z);
    if (ArgMax(z, c_) == b.labels[i]) ++correct;
  }
  return correct * InverseRows(upper);
}

}  // namespace f2obo
