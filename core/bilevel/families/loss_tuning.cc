#include "core/bilevel/families/loss_tuning.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/bilevel/families/gram_bound.h"
#include "core/kernels/softmax.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<BilevelFamily>> LossTuningFamily::Create(
    const FamilyConfig& config) {
  if (absl::Status s = ValidateSoftmaxConfig(config, "loss_tuning"); !s.ok()) return s;
  return std::unique_ptr<BilevelFamily>(
      new LossTuningFamily(config.features, config.classes, config.mu0));
}

absl::Status LossTuningFamily::ValidateBatch(const Batch& b, BatchRole role) const {
  const char* what = role == BatchRole::kUpper ? "upper batch" : "inner batch";
  if (absl::Status s = ValidateFeatures(b, d_, what); !s.ok()) return s;
  if (absl::Status s = ValidateLabels(b, c_, what); !s.ok()) return s;
  if (role == BatchRole::kUpper && b.class_weights.size() > 0) {
    if (b.class_weights.size() != c_) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": class_weights has ",
                                                     b.class_weights.size(),
                                                     " entries, expected classes = ", c_));
    }
    // f's gradients form u_j a_i (class weight times feature): two inputs,
    // at most 1e300 each, so no bound beyond the per-number one is needed.
    for (int j = 0; j < c_; ++j) {
      const double w = b.class_weights[j];
      if (!InputNumberOk(w) || w < 0.0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": class_weights[", j, "] = ", w,
                         " must be finite, >= 0 and <= ", kMaxInputMagnitude));
      }
    }
  }
  return absl::OkStatus();
}

namespace {

void CountLabels(const Batch& b, std::vector<int>* counts) {
  std::fill(counts->begin(), counts->end(), 0);
  for (const int32_t l : b.labels) ++(*counts)[l];
}

}  // namespace

void LossTuningFamily::Prepare(const StepData& data) {
  CountLabels(data.upper, &prepared_counts_);
  prepared_ = &data.upper;
  prepared_labels_ = data.upper.labels.data();
  prepared_rows_ = data.upper.labels.size();
}

void LossTuningFamily::ClassCoefficients(const BatchView& view) {
  const Batch& b = *view.batch;
  if (b.class_weights.size() == c_) {
    coef_ = b.class_weights * InverseRows(view);
    return;
  }
  const bool prepared =
      &b == prepared_ && b.labels.data() == prepared_labels_ && b.labels.size() == prepared_rows_;
  if (!prepared) CountLabels(b, &counts_);
  const std::vector<int>& counts = prepared ? prepared_counts_ : counts_;
  // u_j / n = (m / n) / count_j; m / n is exactly 1 on the whole batch, so
  // full-batch values are those of 1 / count_j.
  const double m_over_n =
      view.rows.n > 0 ? static_cast<double>(b.labels.size()) / view.rows.n : 0.0;
  for (int j = 0; j < c_; ++j) coef_[j] = counts[j] > 0 ? m_over_n / counts[j] : 0.0;
}

void LossTuningFamily::Adjust(const VecIn& x, const double* s, double* z) const {
  for (int j = 0; j < c_; ++j) z[j] = x[j] * s[j] + x[c_ + j];
}

double LossTuningFamily::F(const VecIn&, const VecIn& y, const BatchView& upper, Vector* gx,
                           Vector* gy) {
  const Batch& b = *upper.batch;
  if (gx != nullptr) gx->setZero();
  if (gy != nullptr) gy->setZero();
  ClassCoefficients(upper);
  double* s = s_.data();
  double loss = 0.0;
  for (int k = 0; k < upper.rows.n; ++k) {
    const int i = upper.rows.row(k);
    const int l = b.labels[i];
    const double w = coef_[l];
    if (w == 0.0) continue;
    Logits(b, i, y.data(), d_, c_, s);
    if (gy == nullptr) {
      loss += w * SoftmaxCrossEntropy(s, c_, l);
      continue;
    }
    loss += w * SoftmaxInPlace(s, c_, l);
    s[l] -= 1.0;
    for (int j = 0; j < c_; ++j) s[j] *= w;
    BackProject(b, i, s, d_, c_, gy->data());
  }
  return loss;
}

double LossTuningFamily::G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                           Vector* gy) {
  const Batch& b = *inner.batch;
  if (gx != nullptr) gx->setZero();
  if (gy != nullptr) gy->setZero();
  const double inv_n = InverseRows(inner);
  double* s = s_.data();
  double* z = z_.data();
  double loss = 0.0;
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    const int l = b.labels[i];
    Logits(b, i, y.data(), d_, c_, s);
    Adjust(x, s, z);
    if (gx == nullptr && gy == nullptr) {
      loss += SoftmaxCrossEntropy(z, c_, l);
      continue;
    }
    loss += SoftmaxInPlace(z, c_, l);
    z[l] -= 1.0;  // r = p - e_l
    if (gx != nullptr) {
      for (int j = 0; j < c_; ++j) {
        (*gx)[j] += z[j] * s[j];
        (*gx)[c_ + j] += z[j];
      }
    }
    if (gy != nullptr) {
      for (int j = 0; j < c_; ++j) s[j] = x[j] * z[j] * inv_n;  // gamma . r / n
      BackProject(b, i, s, d_, c_, gy->data());
    }
  }
  if (gx != nullptr) *gx *= inv_n;
  if (gy != nullptr) *gy += mu0_ * y;
  return loss * inv_n + 0.5 * mu0_ * y.squaredNorm();
}

void LossTuningFamily::GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2,
                                  const BatchView& inner, Vector* gy1, Vector* gy2) {
  // One pass over the rows: each a_i is read once for the logits of both
  // points and once more for both back-projections.
  const Batch& b = *inner.batch;
  gy1->setZero();
  gy2->setZero();
  const double inv_n = InverseRows(inner);
  double *s1 = s_.data(), *s2 = s2_.data(), *z1 = z_.data(), *z2 = z2_.data();
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    const int l = b.labels[i];
    LogitsPair(b, i, y1.data(), y2.data(), d_, c_, s1, s2);
    Adjust(x, s1, z1);
    Adjust(x, s2, z2);
    SoftmaxInPlace(z1, c_);
    SoftmaxInPlace(z2, c_);
    z1[l] -= 1.0;
    z2[l] -= 1.0;
    for (int j = 0; j < c_; ++j) {
      z1[j] *= x[j] * inv_n;
      z2[j] *= x[j] * inv_n;
    }
    BackProjectPair(b, i, z1, z2, d_, c_, gy1->data(), gy2->data());
  }
  *gy1 += mu0_ * y1;
  *gy2 += mu0_ * y2;
}

void LossTuningFamily::HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner,
                              const VecIn& v, Vector* out) {
  const Batch& b = *inner.batch;
  out->setZero();
  const double inv_n = InverseRows(inner);
  double *s = s_.data(), *z = z_.data(), *dz = ds_.data();
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    Logits(b, i, y.data(), d_, c_, s);
    Adjust(x, s, z);
    SoftmaxInPlace(z, c_);
    Logits(b, i, v.data(), d_, c_, dz);
    for (int j = 0; j < c_; ++j) dz[j] *= x[j];  // dz = gamma . ds
    SoftmaxHvp(z, dz, c_, dz);                   // Hz
    for (int j = 0; j < c_; ++j) dz[j] *= x[j] * inv_n;
    BackProject(b, i, dz, d_, c_, out->data());
  }
  *out += mu0_ * v;
}

void LossTuningFamily::HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner,
                              const VecIn& v, Vector* out) {
  const Batch& b = *inner.batch;
  out->setZero();
  const double inv_n = InverseRows(inner);
  double *s = s_.data(), *z = z_.data(), *ds = ds_.data(), *hz = z2_.data();
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    const int l = b.labels[i];
    Logits(b, i, y.data(), d_, c_, s);
    Adjust(x, s, z);
    SoftmaxInPlace(z, c_);
    Logits(b, i, v.data(), d_, c_, ds);
    for (int j = 0; j < c_; ++j) hz[j] = x[j] * ds[j];
    SoftmaxHvp(z, hz, c_, hz);
    z[l] -= 1.0;  // r = p - e_l
    for (int j = 0; j < c_; ++j) {
      (*out)[j] += hz[j] * s[j] + z[j] * ds[j];
      (*out)[c_ + j] += hz[j];
    }
  }
  *out *= inv_n;
}

void LossTuningFamily::HvpYYF(const VecIn&, const VecIn& y, const BatchView& upper, const VecIn& v,
                              Vector* out) {
  const Batch& b = *upper.batch;
  out->setZero();
  ClassCoefficients(upper);
  double *p = s_.data(), *ds = ds_.data();
  for (int k = 0; k < upper.rows.n; ++k) {
    const int i = upper.rows.row(k);
    const double w = coef_[b.labels[i]];
    if (w == 0.0) continue;
    Logits(b, i, y.data(), d_, c_, p);
    SoftmaxInPlace(p, c_);
    Logits(b, i, v.data(), d_, c_, ds);
    SoftmaxHvp(p, ds, c_, ds);
    for (int j = 0; j < c_; ++j) ds[j] *= w;
    BackProject(b, i, ds, d_, c_, out->data());
  }
}

Smoothness LossTuningFamily::EstimateSmoothness(const VecIn& x, const VecIn& y,
                                                const StepData& data) {
  // Row bounds as in softmax.h, combined by gram_bound.h.  g's row Hessian
  // is J_i^T G H(z_i) G J_i with G = diag(gamma), whose middle factor has
  // norm at most max_j gamma_j^2 p_j (as H <= diag(p)) and at most
  // max_j gamma_j^2 times the bound on ||H||; f's is u_l J_i^T H(s_i) J_i on
  // the plain logits.  One forward pass per batch.
  Smoothness out;
  double gamma2_max = 0.0;
  for (int j = 0; j < c_; ++j) gamma2_max = std::max(gamma2_max, x[j] * x[j]);
  const BatchView inner = BatchView::All(data.inner);
  double *s = s_.data(), *z = z_.data();
  const int rows = std::max(data.inner.rows(), data.upper.rows());
  if (weights_.size() < rows) weights_.resize(rows);
  for (int k = 0; k < inner.rows.n; ++k) {
    const int i = inner.rows.row(k);
    Logits(*inner.batch, i, y.data(), d_, c_, s);
    Adjust(x, s, z);
    SoftmaxInPlace(z, c_);
    double weighted = 0.0;
    for (int j = 0; j < c_; ++j) weighted = std::max(weighted, x[j] * x[j] * z[j]);
    const double h = std::min(weighted, gamma2_max * SoftmaxCurvatureBound(z, c_));
    weights_[k] = std::isnan(z[0]) ? z[0] : h;
  }
  out.l_g1 = GramBound(inner, weights_.data(), /*augmented=*/true) * InverseRows(inner) + mu0_;

  const BatchView upper = BatchView::All(data.upper);
  ClassCoefficients(upper);
  for (int k = 0; k < upper.rows.n; ++k) {
    const int i = upper.rows.row(k);
    const double w = coef_[upper.batch->labels[i]];
    weights_[k] = 0.0;
    if (w == 0.0) continue;
    Logits(*upper.batch, i, y.data(), d_, c_, s);
    SoftmaxInPlace(s, c_);
    weights_[k] = w * SoftmaxCurvatureBound(s, c_);
  }
  out.l_f1 = GramBound(upper, weights_.data(), /*augmented=*/true);
  out.source = SmoothnessSource::kBatchBound;
  return out;
}

std::optional<double> LossTuningFamily::Accuracy(const VecIn&, const VecIn& y,
                                                 const BatchView& upper) {
  const Batch& b = *upper.batch;
  double* s = s_.data();
  int correct = 0;
  for (int k = 0; k < upper.rows.n; ++k) {
    const int i = upper.rows.row(k);
    Logits(b, i, y.data(), d_, c_, s);
    if (ArgMax(s, c_) == b.labels[i]) ++correct;
  }
  return correct * InverseRows(upper);
}

}  // namespace f2obo
