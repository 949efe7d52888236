// `least_squares`: over-parameterized regression, the simple bilevel
// instance of both papers (IR-SCG Sec. 5, AGM-BiO Sec. 5):
//
//   f(x) = (1/2m) ||A_u x - b_u||^2   (upper rows: validation)
//   g(x) = (1/2n) ||A_i x - b_i||^2   (inner rows: training)
//
// x in R^d (FamilyConfig.features = d); rows dense or CSR with `targets`.
// grad f = (1/m) A_u^T (A_u x - b_u), likewise for g; the Hessians are
// (1/m) A_u^T A_u and (1/n) A_i^T A_i, whose norms SmoothnessF / G compute
// by power iteration (MeanGramSpectralNorm, tighter than the Frobenius
// bound ||A||_F^2 / rows).
//
// OuterOptimum (f* = min f over argmin_Z g, on the given rows):
//  * Z = R^d: argmin g = {x : A_i x = A_i x_mn}, x_mn = A_i^+ b_i.  With a
//    column-pivoting QR A_i^T Pi = Q R (rank r) and Q = [Q_r N], every such x
//    is x_mn + N v, so f* = (1/2m) min_v ||A_u N v - (b_u - A_u x_mn)||^2.
//    A_u N is read off Q^T A_u^T (the Householder reflectors applied to the
//    m columns of A_u^T: no d x d matrix is formed, O(d m n)), so it carries
//    no cancellation noise; x_mn = Q_r u with u the least-squares solution
//    of R_r^T u = Pi^T b_i.  Ranks: a QR pivot of A_i below 1e-11 times the
//    largest counts as 0, and a direction of A_u N with a pivot below
//    1e-11 ||A_u||_F (absolute: A_u N may vanish, e.g. validation rows in
//    the training rows' span) is not used.  f* is thus accurate to about
//    1e-11 cond relative to ||b||^2/m.  Columns no row touches are dropped
//    (their entry is free and 0 at the minimum-norm minimizer).
//  * Z constrained: argmin_Z g is the set of minimizers of a constrained
//    problem and f* would need an accurate solve of the constrained bilevel
//    problem itself (what the algorithms do), so no closed form exists in
//    general.  One exact case is kept: if the unconstrained minimizer
//    x* = x_mn + N v (v of least norm) lies in Z (up to 1e-9 (1 + ||x*||)),
//    then min_Z g = min g, argmin_Z g = argmin g ∩ Z contains x*, and f* is
//    the same; otherwise nullopt.
//  * nullopt too when the dense copies would exceed kMaxDenseEntries.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/simple/families/simple_families.h"

namespace f2obo {
namespace {

class LeastSquaresFamily final : public SimpleFamily {
 public:
  explicit LeastSquaresFamily(int d) : d_(d), power_v_(d), power_w_(d) {}

  std::string_view name() const override { return "least_squares"; }
  int x_dim() const override { return d_; }

  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    const char* what = role == BatchRole::kUpper ? "upper batch" : "inner batch";
    if (absl::Status s = ValidateFeatures(b, d_, what); !s.ok()) return s;
    return ValidateTargets(b, what);
  }

  double F(const VecIn& x, const BatchView& upper, Vector* grad) override {
    return HalfMeanSquaredResidual(x, upper, grad);
  }
  double G(const VecIn& x, const BatchView& inner, Vector* grad) override {
    return HalfMeanSquaredResidual(x, inner, grad);
  }
  bool HasStormPass() const override { return true; }
  StormPassOut StormPass(const StormPassIn& in, Vector* estimate) override {
    return StormSquaredResidual(in, estimate, &storm_);
  }
  double SmoothnessF(const BatchView& upper) override {
    return MeanGramSpectralNorm(upper, d_, &power_v_, &power_w_);
  }
  double SmoothnessG(const BatchView& inner) override {
    return MeanGramSpectralNorm(inner, d_, &power_v_, &power_w_);
  }
  double RowGradientBound(const Batch& b, int i, double x_bound) const override {
    return SquaredResidualRowBound(b, i, x_bound);
  }
  // Dense rows are read once (the input check over the batch,
  // then each row's bound, were two reads of every row, ~12% of an IR-FSCG
  // step at d = 1,000): each row's AbsMaxSum is its input check (max <=
  // kMaxInputMagnitude, which no NaN passes) and its bound's max and sum.
  // Anything else, or a batch it refuses, goes through the default, which
  // names the offending field (features before targets, the first bad
  // entry), so the errors are the same.
  absl::Status ValidateStepBatch(const Batch& b, BatchRole role, double x_bound) const override {
    if (b.sparse_features || !std::isfinite(x_bound) || b.rows() == 0 || b.cols() != d_ ||
        b.targets.size() != b.rows() ||
        !ValidateTargets(b, role == BatchRole::kUpper ? "upper batch" : "inner batch").ok()) {
      return SimpleFamily::ValidateStepBatch(b, role, x_bound);
    }
    int over = -1;  // the first row beyond kMaxRowGradient
    double over_bound = 0.0;
    for (int i = 0; i < b.rows(); ++i) {
      double max = 0.0, sum = 0.0;
      AbsMaxSum(b.DenseRow(i), d_, &max, &sum);
      if (!(max <= kMaxInputMagnitude)) return SimpleFamily::ValidateStepBatch(b, role, x_bound);
      // SquaredResidualRowBound from the same two numbers.
      const double bound = std::max(1.0, max) * (sum * x_bound + std::abs(b.targets[i]));
      if (over < 0 && !(bound <= kMaxRowGradient)) {
        over = i;
        over_bound = bound;
      }
    }
    if (over >= 0) return RowBoundError(role, over, over_bound, x_bound);
    return absl::OkStatus();
  }

  std::optional<double> OuterOptimum(const BatchView& upper, const BatchView& inner,
                                     const ConstraintSet& z) override {
    if (upper.rows.n == 0) return 0.0;  // f = 0 on no rows
    std::optional<DenseRows> rows = GatherDenseRows({upper, inner}, d_);
    if (!rows.has_value()) return std::nullopt;
    const Matrix& au = rows->a[0];
    const Matrix& ai = rows->a[1];
    const Eigen::Index w = au.cols();
    // Q^T A_u^T: its top r rows give A_u Q_r, the rest (A_u N)^T.
    Matrix qt_au = au.transpose();
    Vector u(0);
    Eigen::ColPivHouseholderQR<Matrix> qr;
    Eigen::Index r = 0;
    if (ai.rows() > 0) {
      qr.setThreshold(kRankTolerance);
      qr.compute(ai.transpose());
      r = qr.rank();
      qt_au.applyOnTheLeft(qr.householderQ().transpose());
      // A_i x = b_i with x = Q_r u:  R_r^T u = Pi^T b_i (least squares).
      // (matrixR() holds the reflectors below the diagonal: keep R only.)
      const Matrix rr = qr.matrixR().topRows(r).triangularView<Eigen::Upper>();
      const Matrix rt = rr.transpose();  // n x r
      const Vector pb = qr.colsPermutation().transpose() * rows->t[1];
      u = rt.householderQr().solve(pb);
    }
    const Vector t = rows->t[0] - qt_au.topRows(r).transpose() * u;
    const Matrix m = qt_au.bottomRows(w - r).transpose();  // A_u N
    const Vector v = MinNormSolveAbsolute(m, t, kRankTolerance * au.norm());
    const double value = 0.5 * (m * v - t).squaredNorm() / static_cast<double>(au.rows());
    if (z.kind != ConstraintSet::Kind::kNone) {
      Vector coords(w);
      coords << u, v;
      if (r > 0) coords.applyOnTheLeft(qr.householderQ());
      const Vector x = Scatter(*rows, coords, d_);
      if (!z.Contains(x, 1e-9 * (1.0 + x.norm()))) return std::nullopt;
    }
    return value;
  }

 private:
  int d_;
  Vector power_v_, power_w_;  // MeanGramSpectralNorm scratch
  StormScratch storm_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLeastSquaresFamily(const FamilyConfig& config) {
  if (config.features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.features: least_squares needs d > 0, got ", config.features));
  }
  return std::unique_ptr<SimpleFamily>(new LeastSquaresFamily(config.features));
}

}  // namespace f2obo
