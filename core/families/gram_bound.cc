#include "core/families/gram_bound.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>

#include "core/features.h"

namespace f2obo {
namespace {

// At most kSmallGram + 1 square (the augmented column), on the stack.
using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor,
                                  kSmallGram + 1, kSmallGram + 1>;

double Weight(const double* weights, int k) { return weights != nullptr ? weights[k] : 1.0; }

double LargestEigenvalue(const SmallMatrix& m) {
  if (m.rows() == 0) return 0.0;
  Eigen::SelfAdjointEigenSolver<SmallMatrix> eig(m, Eigen::EigenvaluesOnly);
  if (eig.info() != Eigen::Success) return std::numeric_limits<double>::quiet_NaN();
  return std::max(0.0, eig.eigenvalues().maxCoeff()) * (1.0 + 1e-10);
}

}  // namespace

double GramBound(const BatchView& view, const double* weights, bool augmented) {
  const Batch& b = *view.batch;
  const int n = view.rows.n;
  const int d = b.cols();
  const int cols = d + (augmented ? 1 : 0);
  if (!b.sparse_features && std::min(n, cols) <= kSmallGram) {
    if (cols <= n) {  // M itself, cols x cols
      SmallMatrix m = SmallMatrix::Zero(cols, cols);
      for (int k = 0; k < n; ++k) {
        const double w = Weight(weights, k);
        const auto a = b.dense.row(view.rows.row(k));
        m.topLeftCorner(d, d).selfadjointView<Eigen::Lower>().rankUpdate(a.transpose(), w);
        if (augmented) {
          m.block(d, 0, 1, d) += w * a;
          m(d, d) += w;
        }
      }
      return LargestEigenvalue(m.selfadjointView<Eigen::Lower>());
    }
    // The rows' Gram, n x n: K_kl = sqrt(w_k w_l) a~_k . a~_l.
    SmallMatrix m(n, n);
    for (int k = 0; k < n; ++k) {
      const auto ak = b.dense.row(view.rows.row(k));
      for (int l = 0; l <= k; ++l) {
        const double dot = ak.dot(b.dense.row(view.rows.row(l))) + (augmented ? 1.0 : 0.0);
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
