// `linear_inverse`: the linear inverse problem of AGM-BiO (Cao, Jiang,
// Hamedani, Mokhtari, Sec. 5 and its appendix):
//
//   f(x) = (1/2) ||x||^2                        (Q = I; reads no rows)
//   g(x) = (1/2k) sum_{i in inner} (b_i^T x - c_i)^2
//
// x in R^n (FamilyConfig.features = n); the rows (b_i, c_i) of (B, c) stream
// in as inner rows (dense or CSR features b_i, `targets` c_i).  The paper's
// small instance is B = 1^T, c = 1 on Z = R^n_+ (Box(0, +inf)), with
// x* = (1/n) 1, f* = 1/(2n), g* = 0.  Smoothness: L_f = 1, L_g =
// lambda_max(B^T B / k) by power iteration (MeanGramSpectralNorm).
//
// Choices:
//  * The upper batch must be empty: f reads no rows (upper_reads_rows() is
//    false), and rows sent there would be silently ignored, so they are
//    refused ("upper batch: ...").
//  * g is a mean over the rows (the paper's (1/2)||Bx - c||^2 with B of one
//    row is the same thing), so repeated rows of the instance leave g and
//    its minimizers unchanged.
//
// OuterOptimum: argmin g = {x : B x = B x_mn}, x_mn = B^+ c, whose point of
// least norm is x_mn itself, so f* = (1/2) ||B^+ c||^2 on Z = R^n:
//  * the paper's instance (every inner row equal to 1^T, any targets):
//    closed form x_mn = (mean c / n) 1, f* = (mean c)^2 / (2n), O(k n);
//  * otherwise a complete orthogonal decomposition of the inner rows
//    (pivots below 1e-11 times the largest count as 0, so repeated or
//    dependent rows do not amplify rounding; columns no row touches dropped;
//    nullopt beyond kMaxDenseEntries);
//  * Z constrained: f* is the same when x_mn lies in Z (up to
//    1e-9 (1 + ||x_mn||)): then min_Z g = min g and x_mn, the minimizer of f
//    over the larger set argmin g, is feasible.  That covers the paper's
//    instance on R^n_+ when mean c >= 0.  Otherwise nullopt: the constrained
//    bilevel problem has no closed form in general.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/simple/families/simple_families.h"

namespace f2obo {
namespace {

// Whether every row of the view is 1^T (dense: all entries 1; CSR: n stored
// entries, all 1).
bool AllOnesRows(const BatchView& view, int n) {
  const Batch& b = *view.batch;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    if (b.sparse_features) {
      const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
      if (end - begin != n) return false;
      for (int p = begin; p < end; ++p) {
        if (b.csr.valuePtr()[p] != 1.0) return false;
      }
    } else if (!(Eigen::Map<const Vector>(b.DenseRow(i), b.cols()).array() == 1.0).all()) {
      return false;
    }
  }
  return true;
}

class LinearInverseFamily final : public SimpleFamily {
 public:
  explicit LinearInverseFamily(int n) : n_(n), power_v_(n), power_w_(n) {}

  std::string_view name() const override { return "linear_inverse"; }
  int x_dim() const override { return n_; }
  bool upper_reads_rows() const override { return false; }

  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    if (role == BatchRole::kUpper) {
      if (b.rows() != 0 || b.targets.size() != 0 || !b.labels.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "upper batch: linear_inverse's f = (1/2)||x||^2 reads no rows; send the rows "
            "(b_i, c_i) as the inner batch and leave the upper batch empty (got ",
            b.rows(), " rows)"));
      }
      return absl::OkStatus();
    }
    if (absl::Status s = ValidateFeatures(b, n_, "inner batch"); !s.ok()) return s;
    return ValidateTargets(b, "inner batch");
  }

  double F(const VecIn& x, const BatchView&, Vector* grad) override {
    if (grad != nullptr) *grad = x;
    return 0.5 * x.squaredNorm();
  }
  double G(const VecIn& x, const BatchView& inner, Vector* grad) override {
    return HalfMeanSquaredResidual(x, inner, grad);
  }
  double SmoothnessF(const BatchView&) override { return 1.0; }
  double SmoothnessG(const BatchView& inner) override {
    return MeanGramSpectralNorm(inner, n_, &power_v_, &power_w_);
  }
  double RowGradientBound(const Batch& b, int i, double x_bound) const override {
    return SquaredResidualRowBound(b, i, x_bound);
  }

  std::optional<double> OuterOptimum(const BatchView&, const BatchView& inner,
                                     const ConstraintSet& z) override {
    Vector x;
    if (inner.rows.n == 0) {
      x = Vector::Zero(n_);  // g = 0 on no rows: argmin g = R^n
    } else if (AllOnesRows(inner, n_)) {
      double mean = 0.0;
      for (int k = 0; k < inner.rows.n; ++k) mean += inner.batch->targets[inner.rows.row(k)];
      mean /= inner.rows.n;
      x = Vector::Constant(n_, mean / n_);
    } else {
      std::optional<DenseRows> rows = GatherDenseRows({inner}, n_);
      if (!rows.has_value()) return std::nullopt;
      const Vector reduced = MinNormSolve(rows->a[0], rows->t[0]);
      x = Scatter(*rows, reduced, n_);
    }
    if (z.kind != ConstraintSet::Kind::kNone && !z.Contains(x, 1e-9 * (1.0 + x.norm()))) {
      return std::nullopt;
    }
    return 0.5 * x.squaredNorm();
  }

 private:
  int n_;
  Vector power_v_, power_w_;  // MeanGramSpectralNorm scratch
};

}  // namespace

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLinearInverseFamily(
    const FamilyConfig& config) {
  if (config.features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.features: linear_inverse needs n > 0, got ", config.features));
  }
  return std::unique_ptr<SimpleFamily>(new LinearInverseFamily(config.features));
}

}  // namespace f2obo
