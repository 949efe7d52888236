#include "core/bilevel/families/gram_bound.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/features.h"

namespace f2obo {
namespace {

// At most kSmallGram + 1 square (the augmented column), on the stack.
using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor,
                                  kSmallGram + 1, kSmallGram + 1>;

double Weight(const double* weights, int k) { return weights != nullptr ? weights[k] : 1.0; }

// lambda_max of the PSD matrix whose lower triangle m holds, bounded by
// tr(M^8)^(1/8) = ||M^4||_F^(1/4): exact for rank one, within a factor
// rank^(1/8) <= 1.55 always, and two small products instead of an
// eigen-solve (which cost more than a small round).  Scaled to the largest
// entry first so that M^4 cannot overflow.
double LargestEigenvalue(SmallMatrix m) {
  if (m.rows() == 0) return 0.0;
  m.triangularView<Eigen::StrictlyUpper>() = m.transpose();
  const double scale = m.cwiseAbs().maxCoeff();
  if (!(scale > 0.0)) return scale == 0.0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  m /= scale;
  const SmallMatrix m2 = m * m;
  const SmallMatrix m4 = m2 * m2;
  return scale * std::pow(m4.squaredNorm(), 0.125) * (1.0 + 1e-10);
}

// a_k . a_l of two rows of one batch (CSR columns are sorted).
double RowDotRow(const Batch& b, int k, int l) {
  if (!b.sparse_features) return b.dense.row(k).dot(b.dense.row(l));
  const int* ptr = b.csr.outerIndexPtr();
  const int* col = b.csr.innerIndexPtr();
  const double* val = b.csr.valuePtr();
  int i = ptr[k], j = ptr[l];
  double s = 0.0;
  while (i < ptr[k + 1] && j < ptr[l + 1]) {
    if (col[i] < col[j]) {
      ++i;
    } else if (col[j] < col[i]) {
      ++j;
    } else {
      s += val[i++] * val[j++];
    }
  }
  return s;
}

// m (lower triangle) += w a_i a_i^T over the first d columns.
void AddOuter(const Batch& b, int i, double w, SmallMatrix* m) {
  const int d = b.cols();
  if (!b.sparse_features) {
    m->topLeftCorner(d, d).selfadjointView<Eigen::Lower>().rankUpdate(b.dense.row(i).transpose(),
                                                                      w);
    return;
  }
  const int* ptr = b.csr.outerIndexPtr();
  const int* col = b.csr.innerIndexPtr();
  const double* val = b.csr.valuePtr();
  for (int p = ptr[i]; p < ptr[i + 1]; ++p) {
    for (int q = ptr[i]; q < ptr[i + 1]; ++q) {
      if (col[q] <= col[p]) (*m)(col[p], col[q]) += w * val[p] * val[q];
    }
  }
}

// Adds w a_i to row `r` (columns 0..d-1) of m.
void AddRow(const Batch& b, int i, double w, int r, SmallMatrix* m) {
  if (!b.sparse_features) {
    m->block(r, 0, 1, b.cols()) += w * b.dense.row(i);
    return;
  }
  const int* ptr = b.csr.outerIndexPtr();
  for (int p = ptr[i]; p < ptr[i + 1]; ++p) {
    (*m)(r, b.csr.innerIndexPtr()[p]) += w * b.csr.valuePtr()[p];
  }
}

}  // namespace

double GramBound(const BatchView& view, const double* weights, bool augmented) {
  const Batch& b = *view.batch;
  const int n = view.rows.n;
  const int d = b.cols();
  const int cols = d + (augmented ? 1 : 0);
  if (std::min(n, cols) <= kSmallGram) {
    // Dense and CSR rows give the same matrix (up to summation order).
    if (cols <= n) {  // M itself, cols x cols (lower triangle)
      SmallMatrix m = SmallMatrix::Zero(cols, cols);
      for (int k = 0; k < n; ++k) {
        const double w = Weight(weights, k);
        AddOuter(b, view.rows.row(k), w, &m);
        if (augmented) {
          AddRow(b, view.rows.row(k), w, d, &m);
          m(d, d) += w;
        }
      }
      return LargestEigenvalue(m);
    }
    // The rows' Gram, n x n: K_kl = sqrt(w_k w_l) a~_k . a~_l.
    SmallMatrix m(n, n);
    for (int k = 0; k < n; ++k) {
      for (int l = 0; l <= k; ++l) {
        const double dot =
            RowDotRow(b, view.rows.row(k), view.rows.row(l)) + (augmented ? 1.0 : 0.0);
        m(k, l) = m(l, k) = std::sqrt(Weight(weights, k) * Weight(weights, l)) * dot;
      }
    }
    return LargestEigenvalue(m);
  }
  double trace = 0.0;
  for (int k = 0; k < n; ++k) {
    trace += Weight(weights, k) * (RowSquaredNorm(b, view.rows.row(k)) + (augmented ? 1.0 : 0.0));
  }
  return trace;
}

}  // namespace f2obo
