// logistic_hpo's passes over dense batches as blocked matrix products over
// the whole batch (blocked_gemm.h) instead of one matrix-vector product per
// row: logits Z = A W + 1 b^T for all rows at once, the softmax row by row on
// Z (n x C, small), and the back-projection A^T R.  grad_y g at z and y (the
// F2OBO inner iteration) and the HVP's two logits passes use the two models
// side by side, [W_1 W_2] (d x 2C), so each a_i is read once per pass and the
// products are twice as wide.  Small shapes (small_gemm.h) use in-place
// product loops and a block softmax with a vectorized exp (softmax_rows.h)
// instead of Eigen's GEMM and libm's exp; their A W runs from A^T, made
// once per batch at Prepare, and their gradients carry the bias sums and
// the regularizer in the product's stores (SmallGradients).  CSR batches
// keep the row loops of logistic_hpo.cc (their work is in the rows'
// non-zeros, not in a product).
#include <algorithm>

#include "core/bilevel/families/logistic_hpo.h"
#include "core/kernels/blocked_gemm.h"
#include "core/kernels/small_gemm.h"
#include "core/kernels/softmax.h"
#include "core/kernels/softmax_residuals.h"
#include "core/kernels/softmax_rows.h"

namespace f2obo {
namespace {

using RowVectorMap = Eigen::Map<const Eigen::RowVectorXd>;

// An n x c row-major matrix on a flat buffer, grown (never shrunk) as needed;
// Prepare() sizes the buffers, so this allocates only for batches it did not
// see.
Eigen::Map<RowMatrix> Buffer(Vector* buf, Eigen::Index n, Eigen::Index c) {
  if (buf->size() < n * c) buf->resize(n * c);
  return Eigen::Map<RowMatrix>(buf->data(), n, c);
}

// Z = A W and G = A^T R: in-place loops for small shapes (small_gemm.h),
// Eigen's blocked GEMM otherwise.
template <typename A, typename W, typename Z>
void Product(const A& a, const W& w, Z&& z) {
  if (SmallProductShape(a.rows(), a.cols(), w.cols())) {
    SmallProduct(a, w, z);
  } else {
    BlockedProduct(a, w, z);
  }
}

template <typename A, typename R, typename G>
void TransposeProduct(const A& a, const R& r, G&& g) {
  if (SmallProductShape(a.rows(), a.cols(), r.cols())) {
    SmallTransposeProduct(a, r, g);
  } else {
    BlockedTransposeProduct(a, r, g);
  }
}

// r = (p - e_l) / n in place over one row of probabilities: the same two
// roundings per entry as "p_l -= 1, then p *= inv_n" (p - 0 is p), in one
// pass of loads: a row just written entry by entry by the block softmax
// and then read back with wide loads stalls on store forwarding (perf: 20%
// of DenseGradYGPair on one such load).
inline void ResidualInPlace(double* p, int c, int l, double inv_n) {
  for (int j = 0; j < c; ++j) p[j] = (p[j] - (j == l ? 1.0 : 0.0)) * inv_n;
}

// g_m = the cross-entropy gradient (A^T R_m, then the column sums of R_m
// for the biases) for M residual blocks R_m (n x c, row stride ldr), plus,
// if x is given, the regularizer's mu0 w_m + (x_f W_m,f)_f added entry by
// entry as it is stored (small_gemm.h's RidgeEpilogue): the roundings of
// AddRegularizer after the product, in one pass instead of three.
template <int M>
void SmallGradients(const Eigen::Map<const RowMatrix>& a, int d, int c, const double* const* r,
                    int64_t ldr, double mu0, const VecIn* x, const double* const* w,
                    double* const* g) {
  small_gemm::RidgeEpilogue epi;
  if (x != nullptr) {
    epi.mu0 = mu0;
    epi.x = x->data();
    for (int m = 0; m < M; ++m) epi.w[m] = w[m];
  }
  SmallGradientProducts<M>(a.data(), a.outerStride(), a.rows(), d, r, ldr, c, g,
                           x != nullptr ? &epi : nullptr);
}

}  // namespace

void LogisticHpoFamily::ReserveDense() {
  const int rows = std::clamp(65536 / (2 * c_), 1, 256);
  Buffer(&logits_, rows, 2 * c_);
  Buffer(&rows_scratch_, 2 * rows, 1);
  // Not for huge models (valid configs reach 2^31 entries): Prepare sizes it.
  if (static_cast<int64_t>(d_) * c_ <= (int64_t{1} << 19)) Buffer(&wpair_, d_, 2 * c_);
}

void LogisticHpoFamily::PrepareDense(const StepData& data) {
  int rows = 0;
  for (const Batch* b : {&data.upper, &data.inner}) {
    if (!b->sparse_features) rows = std::max(rows, b->rows());
  }
  for (Transposed& t : transposed_of_) t = Transposed{};
  if (rows == 0) return;
  Buffer(&logits_, rows, 2 * c_);
  Buffer(&wpair_, d_, 2 * c_);
  Buffer(&rows_scratch_, 2 * rows, 1);
  // Small shapes: each batch's A^T once per round; the round's ~20 products
  // A W read it (a batch is used by 7 to 13 of them).
  if (!SmallProductShape(rows, d_, c_)) return;
  Eigen::Map<RowMatrix> t = Buffer(&transposed_, 2 * d_, rows);
  const Batch* batches[2] = {&data.upper, &data.inner};
  for (int k = 0; k < 2; ++k) {
    const Batch& b = *batches[k];
    if (b.sparse_features || b.rows() == 0) continue;
    const int n = b.rows();
    double* at = t.data() + static_cast<int64_t>(k) * d_ * rows;
    for (int i = 0; i < n; ++i) {
      for (int f = 0; f < d_; ++f) at[static_cast<int64_t>(f) * n + i] = b.dense(i, f);
    }
    transposed_of_[k] = Transposed{&b, b.dense.data(), n, at};
  }
}

const double* LogisticHpoFamily::TransposedRows(const BatchView& view) const {
  if (view.rows.idx != nullptr) return nullptr;
  for (const Transposed& t : transposed_of_) {
    if (t.batch == view.batch && t.data == view.batch->dense.data() && t.rows == view.rows.n) {
      return t.at;
    }
  }
  return nullptr;
}

Eigen::Map<const RowMatrix> LogisticHpoFamily::DenseRows(const BatchView& view) {
  const Batch& b = *view.batch;
  if (view.rows.idx == nullptr) return {b.dense.data(), view.rows.n, d_};
  Eigen::Map<RowMatrix> a = Buffer(&gathered_, view.rows.n, d_);
  for (int k = 0; k < view.rows.n; ++k) a.row(k) = b.dense.row(view.rows.row(k));
  return {a.data(), view.rows.n, d_};
}

Eigen::Map<RowMatrix> LogisticHpoFamily::DenseLogits(const Eigen::Map<const RowMatrix>& a,
                                                     const double* at, const VecIn& y) {
  Eigen::Map<RowMatrix> z = Buffer(&logits_, a.rows(), c_);
  if (at != nullptr && SmallProductShape(a.rows(), d_, c_)) {
    const double* w[1] = {y.data()};
    double* out[1] = {z.data()};
    SmallProductsFromTranspose<1>(at, a.rows(), d_, w, c_, out, c_, /*bias=*/true);
    return z;
  }
  Product(a, Eigen::Map<const RowMatrix>(y.data(), d_, c_), z);
  z.rowwise() += RowVectorMap(y.data() + static_cast<size_t>(d_) * c_, c_);
  return z;
}

double LogisticHpoFamily::DenseCrossEntropy(const VecIn& y, const BatchView& view, Vector* gy,
                                            bool value, const VecIn* ridge_x) {
  const Batch& b = *view.batch;
  const int n = view.rows.n;
  const double inv_n = InverseRows(view);
  const Eigen::Map<const RowMatrix> a = DenseRows(view);
  const double* at = TransposedRows(view);
  double loss = 0.0;
  if (gy != nullptr && at != nullptr && SmallProductShape(n, d_, c_)) {
    // Logits, softmax and residual in one pass (softmax_residuals.h); A^T
    // exists for whole batches only, so row k is the batch's row k.
    Eigen::Map<RowMatrix> rz = Buffer(&logits_, n, c_);
    double* ce = value ? Buffer(&rows_scratch_, 2 * n, 1).data() : nullptr;
    const double* w[1] = {y.data()};
    double* out[1] = {rz.data()};
    auto label = [&](int k) { return b.labels[k]; };
    if (SmallSoftmaxResiduals<1>(at, n, d_, w, c_, label, inv_n, out, c_, ce)) {
      for (int k = 0; value && k < n; ++k) loss += ce[k];
      const double* r[1] = {rz.data()};
      double* g[1] = {gy->data()};
      SmallGradients<1>(a, d_, c_, r, c_, mu0_, ridge_x, w, g);
      return loss * inv_n;
    }
  }
  Eigen::Map<RowMatrix> z = DenseLogits(a, at, y);
  if (SmallProductShape(n, d_, c_)) {
    // The block's softmax at once (softmax_rows.h): vectorized exp.
    double* ce = Buffer(&rows_scratch_, 2 * n, 1).data();
    auto label = [&](int k) { return b.labels[view.rows.row(k)]; };
    SoftmaxRowsInPlace(z.data(), n, c_, c_, label, value ? ce : nullptr, ce + n);
    if (value) {
      for (int k = 0; k < n; ++k) loss += ce[k];
    }
    if (gy == nullptr) return loss * inv_n;
    for (int k = 0; k < n; ++k) ResidualInPlace(z.row(k).data(), c_, label(k), inv_n);
    const double* r[1] = {z.data()};
    const double* w[1] = {y.data()};
    double* g[1] = {gy->data()};
    SmallGradients<1>(a, d_, c_, r, c_, mu0_, ridge_x, w, g);
    return loss * inv_n;
  }
  for (int k = 0; k < n; ++k) {
    double* zk = z.row(k).data();
    const int l = b.labels[view.rows.row(k)];
    if (gy == nullptr) {
      loss += SoftmaxCrossEntropy(zk, c_, l);
      continue;
    }
    loss += SoftmaxInPlace(zk, c_, value ? l : -1);
    zk[l] -= 1.0;  // r = p - e_l
    for (int j = 0; j < c_; ++j) zk[j] *= inv_n;
  }
  if (gy != nullptr) {
    TransposeProduct(a, z, Eigen::Map<RowMatrix>(gy->data(), d_, c_));
    gy->tail(c_) = z.colwise().sum().transpose();
    if (ridge_x != nullptr) AddRegularizer(*ridge_x, y, gy);
  }
  return loss * inv_n;
}

Eigen::Map<RowMatrix> LogisticHpoFamily::DenseLogitsPair(const Eigen::Map<const RowMatrix>& a,
                                                         const double* at, const VecIn& y1,
                                                         const VecIn& y2) {
  const Eigen::Index n = a.rows();
  const size_t w = static_cast<size_t>(d_) * c_;
  Eigen::Map<RowMatrix> z = Buffer(&logits_, n, 2 * c_);
  if (at != nullptr && SmallProductShape(n, d_, 2 * c_)) {
    // Both models in one pass across rows (small_gemm.h): 2C chains.
    const double* ws[2] = {y1.data(), y2.data()};
    double* out[2] = {z.data(), z.data() + c_};
    SmallProductsFromTranspose<2>(at, n, d_, ws, c_, out, 2 * c_, /*bias=*/true);
    return z;
  }
  if (SmallProductShape(n, d_, 2 * c_)) {
    // No [W_1 W_2] copy: the loops read each model in place (a is in L1).
    SmallProduct(a, Eigen::Map<const RowMatrix>(y1.data(), d_, c_), z.leftCols(c_));
    SmallProduct(a, Eigen::Map<const RowMatrix>(y2.data(), d_, c_), z.rightCols(c_));
  } else {
    Eigen::Map<RowMatrix> pair = Buffer(&wpair_, d_, 2 * c_);
    pair.leftCols(c_) = Eigen::Map<const RowMatrix>(y1.data(), d_, c_);
    pair.rightCols(c_) = Eigen::Map<const RowMatrix>(y2.data(), d_, c_);
    BlockedProduct(a, pair, z);
  }
  z.leftCols(c_).rowwise() += RowVectorMap(y1.data() + w, c_);
  z.rightCols(c_).rowwise() += RowVectorMap(y2.data() + w, c_);
  return z;
}

void LogisticHpoFamily::DenseGradYGPair(const VecIn& y1, const VecIn& y2, const BatchView& inner,
                                        Vector* gy1, Vector* gy2, const VecIn* ridge_x) {
  const Batch& b = *inner.batch;
  const double inv_n = InverseRows(inner);
  const Eigen::Map<const RowMatrix> a = DenseRows(inner);
  const double* at = TransposedRows(inner);
  const int n = inner.rows.n;
  if (at != nullptr && SmallProductShape(n, d_, 2 * c_)) {
    // Both models' logits, softmax and residuals in one pass
    // (softmax_residuals.h), side by side in an n x 2C block.
    Eigen::Map<RowMatrix> rz = Buffer(&logits_, n, 2 * c_);
    const double* w[2] = {y1.data(), y2.data()};
    double* out[2] = {rz.data(), rz.data() + c_};
    auto label = [&](int k) { return b.labels[k]; };
    if (SmallSoftmaxResiduals<2>(at, n, d_, w, c_, label, inv_n, out, 2 * c_, nullptr)) {
      const double* r[2] = {rz.data(), rz.data() + c_};
      double* g[2] = {gy1->data(), gy2->data()};
      SmallGradients<2>(a, d_, c_, r, 2 * c_, mu0_, ridge_x, w, g);
      return;
    }
  }
  if (!SmallProductShape(n, d_, 2 * c_) && SmallProductShape(n, d_, c_)) {
    // The pair is past the small kernels' shape but each model is within
    // it (e.g. 32 rows of 128 features, C = 10): two small-kernel passes,
    // each gradient exactly as DenseCrossEntropy computes it (as
    // HypergradientGrads already does at these shapes), cost less than
    // one generic blocked product of the pair, whose packing and 2C-wide
    // blocks took ~1/3 of af2obo's round on the quality suite's digits.
    DenseCrossEntropy(y1, inner, gy1, /*value=*/false, ridge_x);
    DenseCrossEntropy(y2, inner, gy2, /*value=*/false, ridge_x);
    return;
  }
  Eigen::Map<RowMatrix> z = DenseLogitsPair(a, at, y1, y2);
  if (SmallProductShape(n, d_, 2 * c_)) {
    // Both halves of every row as 2n rows of C (softmax_rows.h).
    auto none = [](int) { return 0; };
    SoftmaxRowsInPlace(z.data(), 2 * n, c_, c_, none, nullptr,
                       Buffer(&rows_scratch_, 2 * n, 1).data());
    for (int k = 0; k < n; ++k) {
      double* z1 = z.row(k).data();
      const int l = b.labels[inner.rows.row(k)];
      ResidualInPlace(z1, c_, l, inv_n);
      ResidualInPlace(z1 + c_, c_, l, inv_n);
    }
    // Both right-hand sides in one pass over the rows: 2C chains.
    const double* r[2] = {z.data(), z.data() + c_};
    const double* w[2] = {y1.data(), y2.data()};
    double* g[2] = {gy1->data(), gy2->data()};
    SmallGradients<2>(a, d_, c_, r, 2 * c_, mu0_, ridge_x, w, g);
    return;
  }
  for (int k = 0; k < n; ++k) {
    double* z1 = z.row(k).data();
    double* z2 = z1 + c_;
    const int l = b.labels[inner.rows.row(k)];
    SoftmaxInPlace(z1, c_);
    SoftmaxInPlace(z2, c_);
    z1[l] -= 1.0;
    z2[l] -= 1.0;
    for (int j = 0; j < 2 * c_; ++j) z1[j] *= inv_n;
  }
  // The pair's weights are dead: its buffer takes the pair's gradients.
  Eigen::Map<RowMatrix> g = Buffer(&wpair_, d_, 2 * c_);
  BlockedTransposeProduct(a, z, g);
  Eigen::Map<RowMatrix>(gy1->data(), d_, c_) = g.leftCols(c_);
  Eigen::Map<RowMatrix>(gy2->data(), d_, c_) = g.rightCols(c_);
  gy1->tail(c_) = z.leftCols(c_).colwise().sum().transpose();
  gy2->tail(c_) = z.rightCols(c_).colwise().sum().transpose();
  if (ridge_x != nullptr) {
    AddRegularizer(*ridge_x, y1, gy1);
    AddRegularizer(*ridge_x, y2, gy2);
  }
}

void LogisticHpoFamily::DenseCrossEntropyHvp(const VecIn& y, const BatchView& view, const VecIn& v,
                                             Vector* out) {
  const double inv_n = InverseRows(view);
  const Eigen::Map<const RowMatrix> a = DenseRows(view);
  // Left: logits at y, turned into p; right: dz = V^T a_i + v_b, into u.
  Eigen::Map<RowMatrix> z = DenseLogitsPair(a, TransposedRows(view), y, v);
  for (int k = 0; k < view.rows.n; ++k) {
    double* p = z.row(k).data();
    double* dz = p + c_;
    SoftmaxInPlace(p, c_);
    SoftmaxHvp(p, dz, c_, dz);
    for (int j = 0; j < c_; ++j) dz[j] *= inv_n;
  }
  TransposeProduct(a, z.rightCols(c_), Eigen::Map<RowMatrix>(out->data(), d_, c_));
  out->tail(c_) = z.rightCols(c_).colwise().sum().transpose();
}

}  // namespace f2obo
