// The row kernels shared by the simple bilevel families (declared in
// core/simple/families/simple_families.h).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/features.h"
#include "core/simple/families/simple_families.h"

namespace f2obo {

double HalfMeanSquaredResidual(const VecIn& x, const BatchView& view, Vector* grad) {
  if (grad != nullptr) {
    grad->resize(x.size());
    grad->setZero();
  }
  if (view.rows.n == 0) return 0.0;
  const Batch& b = *view.batch;
  const double inv_n = view.rows.n > 0 ? 1.0 / view.rows.n : 0.0;
  double loss = 0.0;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    const double r = RowDot(b, i, x.data()) - b.targets[i];
    loss += r * r;
    if (grad != nullptr) RowAxpy(b, i, r * inv_n, grad->data());
  }
  return 0.5 * loss * inv_n;
}

double MeanRowSquaredNorm(const BatchView& view) {
  if (view.rows.n == 0) return 0.0;
  const Batch& b = *view.batch;
  double s = 0.0;
  for (int k = 0; k < view.rows.n; ++k) {
    const int i = view.rows.row(k);
    if (b.sparse_features) {
      const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
      for (int p = begin; p < end; ++p) s += b.csr.valuePtr()[p] * b.csr.valuePtr()[p];
    } else {
      s += RowSquaredNorm(b, i);
    }
  }
  return s / view.rows.n;
}

void RowAbsMaxSum(const Batch& b, int i, double* max, double* sum) {
  *max = 0.0;
  *sum = 0.0;
  if (b.sparse_features) {
    for (int p = b.csr.outerIndexPtr()[i]; p < b.csr.outerIndexPtr()[i + 1]; ++p) {
      const double v = std::abs(b.csr.valuePtr()[p]);
      *max = std::max(*max, v);
      *sum += v;
    }
  } else if (b.cols() > 0) {
    const Eigen::Map<const Vector> row(b.DenseRow(i), b.cols());
    *max = row.cwiseAbs().maxCoeff();
    *sum = row.cwiseAbs().sum();
  }
}

double SquaredResidualRowBound(const Batch& b, int i, double x_bound) {
  double max = 0.0, sum = 0.0;
  RowAbsMaxSum(b, i, &max, &sum);
  const double target = b.targets.size() > i ? std::abs(b.targets[i]) : 0.0;
  return std::max(1.0, max) * (sum * x_bound + target);
}

double MeanGramSpectralNorm(const BatchView& view, int cols, Vector* v, Vector* w) {
  const double frobenius = MeanRowSquaredNorm(view);
  if (!(frobenius > 0.0) || cols == 0) return frobenius;
  const Batch& b = *view.batch;
  const double inv_n = 1.0 / view.rows.n;
  v->resize(cols);
  w->resize(cols);
  for (int j = 0; j < cols; ++j) (*v)[j] = 1.0 / std::sqrt(j + 1.0);
  v->normalize();
  double quotient = 0.0;
  for (int it = 0; it < kPowerIterations; ++it) {
    w->setZero();
    for (int k = 0; k < view.rows.n; ++k) {
      const int i = view.rows.row(k);
      RowAxpy(b, i, RowDot(b, i, v->data()) * inv_n, w->data());
    }
    const double next = v->dot(*w);  // Rayleigh quotient, ||v|| = 1
    const double norm = w->norm();
    if (!(norm > 0.0)) break;  // v in the null space: keep the Frobenius bound
    *v = *w / norm;
    const bool settled = std::abs(next - quotient) <= kPowerTolerance * next;
    quotient = next;
    if (settled) break;
  }
  if (!(quotient > 0.0)) return frobenius;
  return std::min(frobenius, kPowerSafety * quotient);
}

std::optional<DenseRows> GatherDenseRows(const std::vector<BatchView>& views, int cols) {
  // Which columns are used (all of them as soon as one view is dense).
  std::vector<int> slot(static_cast<size_t>(cols), -1);
  int64_t total_rows = 0;
  for (const BatchView& v : views) {
    total_rows += v.rows.n;
    if (v.rows.n == 0) continue;
    const Batch& b = *v.batch;
    if (!b.sparse_features) {
      std::fill(slot.begin(), slot.end(), 0);
      continue;
    }
    for (int k = 0; k < v.rows.n; ++k) {
      const int i = v.rows.row(k);
      for (int p = b.csr.outerIndexPtr()[i]; p < b.csr.outerIndexPtr()[i + 1]; ++p) {
        slot[static_cast<size_t>(b.csr.innerIndexPtr()[p])] = 0;
      }
    }
  }
  DenseRows out;
  for (int j = 0; j < cols; ++j) {
    if (slot[static_cast<size_t>(j)] < 0) continue;
    slot[static_cast<size_t>(j)] = static_cast<int>(out.columns.size());
    out.columns.push_back(j);
  }
  const int64_t width = static_cast<int64_t>(out.columns.size());
  if (total_rows * width > kMaxDenseEntries) return std::nullopt;
  for (const BatchView& v : views) {
    Matrix a = Matrix::Zero(v.rows.n, width);
    Vector t(v.rows.n);
    const Batch* b = v.batch;
    for (int k = 0; k < v.rows.n; ++k) {
      const int i = v.rows.row(k);
      t[k] = b->targets.size() > i ? b->targets[i] : 0.0;
      if (b->sparse_features) {
        for (int p = b->csr.outerIndexPtr()[i]; p < b->csr.outerIndexPtr()[i + 1]; ++p) {
          a(k, slot[static_cast<size_t>(b->csr.innerIndexPtr()[p])]) = b->csr.valuePtr()[p];
        }
      } else {
        const double* row = b->DenseRow(i);
        for (int64_t c = 0; c < width; ++c) a(k, c) = row[out.columns[c]];
      }
    }
    out.a.push_back(std::move(a));
    out.t.push_back(std::move(t));
  }
  return out;
}

Vector Scatter(const DenseRows& rows, const Vector& reduced, int cols) {
  Vector x = Vector::Zero(cols);
  for (size_t c = 0; c < rows.columns.size(); ++c) x[rows.columns[c]] = reduced[c];
  return x;
}

Vector MinNormSolve(const Matrix& a, const Vector& b) {
  Eigen::CompleteOrthogonalDecomposition<Matrix> cod;
  cod.setThreshold(kRankTolerance);
  cod.compute(a);
  return cod.solve(b);
}

Vector MinNormSolveAbsolute(const Matrix& a, const Vector& b, double abs_tol) {
  // The first pivot of a column-pivoting QR is the largest column norm, so
  // a relative threshold of abs_tol / that norm is the absolute abs_tol.
  const double largest = a.size() == 0 ? 0.0 : a.colwise().norm().maxCoeff();
  if (!(largest > abs_tol)) return Vector::Zero(a.cols());
  Eigen::CompleteOrthogonalDecomposition<Matrix> cod;
  cod.setThreshold(abs_tol / largest);
  cod.compute(a);
  return cod.solve(b);
}

}  // namespace f2obo
