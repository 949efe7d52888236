// Row-wise kernels over dense or CSR feature rows.  Sample-based families
// loop over a view's rows with these, so one code path serves full batches,
// SF2OBO mini-batches and both storage formats, and nothing allocates.
#ifndef F2OBO_CORE_FEATURES_H_
#define F2OBO_CORE_FEATURES_H_

#include <cmath>

#include "core/batch.h"

namespace f2obo {

// a * b rounded to a double before it is summed: never contracted into a
// fused multiply-add with the sum.  Whether the compiler would contract
// depends on the target's tuning and on how a loop is vectorized (GCC on
// znver keeps a scalar chain of sums unfused but fused the same sums run
// side by side in pairs), so sums formed with it have the same bits in
// every kernel that forms them in the same order (RowDot and RowDots).
inline double RoundedProduct(double a, double b) {
  double p = a * b;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  asm("" : "+v"(p));  // opaque: the product is materialized before the add
#endif
  return p;
}

// a * b + c with one rounding where the target has a fused multiply-add
// (what the compiler makes of it when it contracts), pinned: GCC on znver
// keeps a sum that is alone in its loop unfused and fuses the same sum in
// a loop that does more, so kernels of different shapes (a row walk and
// the same walk by column tiles) need it to give the same bits.
inline double FusedMulAdd(double a, double b, double c) {
#if defined(__FMA__)
  return std::fma(a, b, c);
#else
  return a * b + c;
#endif
}

// a_i . w  (w has cols() entries); sparse rows summed in order with
// RoundedProduct.
inline double RowDot(const Batch& b, int i, const double* w) {
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    double s = 0.0;
    for (int k = begin; k < end; ++k) s += RoundedProduct(val[k], w[col[k]]);
    return s;
  }
  // Mapped wherever the row is stored: Eigen sums a dot product of two
  // maps in the same order whatever their alignment (unaligned loads from
  // the first entry, no peeling), so a row copied elsewhere gives the same
  // bits (tests/core/features_test.cc).
  const int n = b.cols();
  return Eigen::Map<const Vector>(b.DenseRow(i), n).dot(Eigen::Map<const Vector>(w, n));
}

// a_i . w[p] for p < kPoints, each summed as RowDot (the same bits), in
// one loop over the row: the kPoints sums are independent chains that run
// side by side, so the walk costs about one RowDot (a sparse RowDot is
// bound by the latency of its chain of additions, not by its loads).
template <int kPoints>
inline void RowDots(const Batch& b, int i, const double* const* w, double* out) {
  if (!b.sparse_features) {
    for (int p = 0; p < kPoints; ++p) out[p] = RowDot(b, i, w[p]);
    return;
  }
  const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
  const int* col = b.csr.innerIndexPtr();
  const double* val = b.csr.valuePtr();
  double s[kPoints];
  for (int p = 0; p < kPoints; ++p) s[p] = 0.0;
  for (int k = begin; k < end; ++k) {
    const double v = val[k];
    const int c = col[k];
    for (int p = 0; p < kPoints; ++p) s[p] += RoundedProduct(v, w[p][c]);
  }
  for (int p = 0; p < kPoints; ++p) out[p] = s[p];
}

// ||a_i||^2
inline double RowSquaredNorm(const Batch& b, int i) {
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const double* val = b.csr.valuePtr();
    double s = 0.0;
    for (int k = begin; k < end; ++k) s += val[k] * val[k];
    return s;
  }
  return Eigen::Map<const Vector>(b.DenseRow(i), b.cols()).squaredNorm();
}

// out += s * a_i  (out has cols() entries)
inline void RowAxpy(const Batch& b, int i, double s, double* out) {
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    for (int k = begin; k < end; ++k) out[col[k]] += s * val[k];
    return;
  }
  const int n = b.cols();
  Eigen::Map<Vector>(out, n) += s * Eigen::Map<const Vector>(b.DenseRow(i), n);
}

// out (C) = W^T a_i for W d x C row-major (feature-major) at `w`.
inline void RowTimesMatrix(const Batch& b, int i, const double* w, int classes, double* out) {
  Eigen::Map<Vector> o(out, classes);
  o.setZero();
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    for (int k = begin; k < end; ++k) {
      o += val[k] * Eigen::Map<const Vector>(w + static_cast<size_t>(col[k]) * classes, classes);
    }
    return;
  }
  const int n = b.cols();
  const Eigen::Map<const RowMatrix> W(w, n, classes);
  o.noalias() = W.transpose() * Eigen::Map<const Vector>(b.DenseRow(i), n);
}

// G += a_i r^T for G d x C row-major at `g` (r has C entries).
inline void RowOuterAdd(const Batch& b, int i, const double* r, int classes, double* g) {
  const Eigen::Map<const Vector> rv(r, classes);
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    for (int k = begin; k < end; ++k) {
      Eigen::Map<Vector>(g + static_cast<size_t>(col[k]) * classes, classes) += val[k] * rv;
    }
    return;
  }
  const int n = b.cols();
  Eigen::Map<RowMatrix> G(g, n, classes);
  G.noalias() += Eigen::Map<const Vector>(b.DenseRow(i), n) * rv.transpose();
}

}  // namespace f2obo

#endif  // F2OBO_CORE_FEATURES_H_
