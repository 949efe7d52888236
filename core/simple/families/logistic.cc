// `logistic`: pick, among the linear classifiers that fit the training
// (inner) rows best, the one that does best on the validation (upper) rows:
//
//   f(x) = (1/m) sum_{i in upper} CE(W^T a_i, l_i)
//   g(x) = (1/n) sum_{i in inner} CE(W^T a_i, l_i)
//
// CE the softmax cross-entropy (core/kernels/softmax.h: stable for logits
// of any magnitude).  x = W, d x C, stored feature-major like the bilevel
// softmax families: W_f (the C weights of feature f) at x[f*C .. f*C + C),
// so x_dim = d C (FamilyConfig.features = d, classes = C >= 2).  No bias
// term: a constant feature column gives one.  Rows dense or CSR with
// `labels` in [0, C).
//
// grad = (1/rows) sum a_i (p_i - e_{l_i})^T.  Smoothness: the CE Hessian in
// logit space diag(p) - p p^T has eigenvalues <= 1/2 (Böhning 1992), so the
// Hessian in x, (1/rows) sum (a_i a_i^T) ⊗ (diag(p_i) - p_i p_i^T), is
// bounded by lambda_max(A^T A / rows) / 2 (power iteration,
// MeanGramSpectralNorm; tighter than the Frobenius bound ||A||_F^2 /
// (2 rows)).
//
// OuterOptimum: nullopt.  On separable training rows argmin g is empty (the
// infimum 0 is approached only as ||W|| -> inf), and otherwise the outer
// problem has no closed form.
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/features.h"
#include "core/kernels/softmax.h"
#include "core/simple/families/simple_families.h"

namespace f2obo {
namespace {

class LogisticFamily final : public SimpleFamily {
 public:
  LogisticFamily(int d, int c) : d_(d), c_(c), z_(c), power_v_(d), power_w_(d) {}

  std::string_view name() const override { return "logistic"; }
  int x_dim() const override { return d_ * c_; }
  bool is_classification() const override { return true; }

  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    const char* what = role == BatchRole::kUpper ? "upper batch" : "inner batch";
    if (absl::Status s = ValidateFeatures(b, d_, what); !s.ok()) return s;
    return ValidateLabels(b, c_, what);
  }

  // (softmax - one-hot) ⊗ a_i: each entry at most max_j |a_ij|, whatever x.
  double RowGradientBound(const Batch& b, int i, double) const override {
    double max = 0.0, sum = 0.0;
    RowAbsMaxSum(b, i, &max, &sum);
    return max;
  }

  double F(const VecIn& x, const BatchView& upper, Vector* grad) override {
    return CrossEntropy(x, upper, grad);
  }
  double G(const VecIn& x, const BatchView& inner, Vector* grad) override {
    return CrossEntropy(x, inner, grad);
  }
  double SmoothnessF(const BatchView& upper) override {
    return 0.5 * MeanGramSpectralNorm(upper, d_, &power_v_, &power_w_);
  }
  double SmoothnessG(const BatchView& inner) override {
    return 0.5 * MeanGramSpectralNorm(inner, d_, &power_v_, &power_w_);
  }

  std::optional<double> Accuracy(const VecIn& x, const BatchView& upper) override {
    if (upper.rows.n == 0) return std::nullopt;
    const Batch& b = *upper.batch;
    int correct = 0;
    for (int k = 0; k < upper.rows.n; ++k) {
      const int i = upper.rows.row(k);
      RowTimesMatrix(b, i, x.data(), c_, z_.data());
      if (ArgMax(z_.data(), c_) == b.labels[i]) ++correct;
    }
    return static_cast<double>(correct) / upper.rows.n;
  }

 private:
  // Mean CE over the view and, if non-null, its gradient.
  double CrossEntropy(const VecIn& x, const BatchView& view, Vector* grad) {
    if (grad != nullptr) {
      grad->resize(x_dim());
      grad->setZero();
    }
    if (view.rows.n == 0) return 0.0;
    const Batch& b = *view.batch;
    const double inv_n = 1.0 / view.rows.n;
    double* z = z_.data();
    double loss = 0.0;
    for (int k = 0; k < view.rows.n; ++k) {
      const int i = view.rows.row(k);
      const int l = b.labels[i];
      RowTimesMatrix(b, i, x.data(), c_, z);
      if (grad == nullptr) {
        loss += SoftmaxCrossEntropy(z, c_, l);
        continue;
      }
      loss += SoftmaxInPlace(z, c_, l);
      z[l] -= 1.0;  // r = p - e_l
      for (int j = 0; j < c_; ++j) z[j] *= inv_n;
      RowOuterAdd(b, i, z, c_, grad->data());
    }
    return loss * inv_n;
  }

  int d_;
  int c_;
  Vector z_;                  // logits / probabilities scratch (C)
  Vector power_v_, power_w_;  // MeanGramSpectralNorm scratch (d)
};

}  // namespace

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLogisticFamily(const FamilyConfig& config) {
  if (config.features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.features: logistic needs d > 0, got ", config.features));
  }
  if (config.classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.classes: logistic needs C >= 2, got ", config.classes));
  }
  if (static_cast<int64_t>(config.features) * config.classes >
      static_cast<int64_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError("family.features: d * C does not fit the parameter vector");
  }
  return std::unique_ptr<SimpleFamily>(new LogisticFamily(config.features, config.classes));
}

}  // namespace f2obo
