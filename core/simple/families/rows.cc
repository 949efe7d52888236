// The row kernels shared by the simple bilevel families (declared in
// core/simple/families/simple_families.h).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

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
    loss = FusedMulAdd(r, r, loss);
    if (grad != nullptr) RowAxpy(b, i, r * inv_n, grad->data());
  }
  return 0.5 * loss * inv_n;
}

namespace {

// StormSquaredResidual's walk: points x, then prev (kPrev), then at (kAt).
template <bool kPrev, bool kAt>
StormPassOut StormWalk(const StormPassIn& in, double* estimate) {
  constexpr int kPoints = 1 + (kPrev ? 1 : 0) + (kAt ? 1 : 0);
  const double* w[3] = {in.x->data(), nullptr, nullptr};
  if (kPrev) w[1] = in.prev->data();
  if (kAt) w[kPrev ? 2 : 1] = in.at->data();
  const Batch& b = *in.view->batch;
  const double inv_n = 1.0 / in.view->rows.n;
  double loss_x = 0.0, loss_at = 0.0;
  for (int k = 0; k < in.view->rows.n; ++k) {
    const int i = in.view->rows.row(k);
    double m[kPoints];
    RowDots<kPoints>(b, i, w, m);
    const double r = m[0] - b.targets[i];
    loss_x = FusedMulAdd(r, r, loss_x);
    if (kAt) {
      const double ra = m[kPoints - 1] - b.targets[i];
      loss_at = FusedMulAdd(ra, ra, loss_at);
    }
    const double coef = kPrev ? FusedMulAdd(-in.keep, m[1] - b.targets[i], r) * inv_n : r * inv_n;
    RowAxpy(b, i, coef, estimate);
  }
  return {0.5 * loss_x * inv_n, 0.5 * loss_at * inv_n};
}

// StormWalk on CSR rows by column tiles of kStormTile entries: the
// margins tile by tile (each row's sums continue from tile to tile, in
// column order: RowDot's order, the same bits), then the estimate tile by
// tile, (1 - a) d_{k-1} and every row's entries in the tile in row order
// (each entry's additions in the order of StormWalk: the same bits).  The
// three points' tiles and the estimate's stay in L2 while the rows pass,
// where the row-by-row walk gathered from three 800 KB vectors at once
// (d = 100,000: more than L2 holds).
constexpr int kStormTile = 8192;

template <bool kPrev, bool kAt>
StormPassOut StormWalkTiled(const StormPassIn& in, Vector* estimate, StormScratch* scratch) {
  constexpr int kPoints = 1 + (kPrev ? 1 : 0) + (kAt ? 1 : 0);
  const double* w[3] = {in.x->data(), nullptr, nullptr};
  if (kPrev) w[1] = in.prev->data();
  if (kAt) w[kPrev ? 2 : 1] = in.at->data();
  const Batch& b = *in.view->batch;
  const int n = in.view->rows.n;
  const int d = static_cast<int>(in.x->size());
  const int* outer = b.csr.outerIndexPtr();
  const int* col = b.csr.innerIndexPtr();
  const double* val = b.csr.valuePtr();
  std::vector<int>& cursor = scratch->cursor;
  std::vector<double>& sums = scratch->sums;
  cursor.resize(static_cast<size_t>(n));
  sums.assign(static_cast<size_t>(n) * kPoints, 0.0);
  for (int k = 0; k < n; ++k) cursor[k] = outer[in.view->rows.row(k)];
  for (int lo = 0; lo < d; lo += kStormTile) {
    const int hi = std::min(d, lo + kStormTile);
    for (int k = 0; k < n; ++k) {
      const int end = outer[in.view->rows.row(k) + 1];
      double s[kPoints];
      for (int p = 0; p < kPoints; ++p) s[p] = sums[static_cast<size_t>(k) * kPoints + p];
      int e = cursor[k];
      for (; e < end && col[e] < hi; ++e) {
        const double v = val[e];
        const int c = col[e];
        for (int p = 0; p < kPoints; ++p) s[p] += RoundedProduct(v, w[p][c]);
      }
      cursor[k] = e;
      for (int p = 0; p < kPoints; ++p) sums[static_cast<size_t>(k) * kPoints + p] = s[p];
    }
  }
  // The losses in row order, and each row's coefficient (into sums[k * kPoints]).
  const double inv_n = 1.0 / n;
  double loss_x = 0.0, loss_at = 0.0;
  for (int k = 0; k < n; ++k) {
    const int i = in.view->rows.row(k);
    const double* m = &sums[static_cast<size_t>(k) * kPoints];
    const double r = m[0] - b.targets[i];
    loss_x = FusedMulAdd(r, r, loss_x);
    if (kAt) {
      const double ra = m[kPoints - 1] - b.targets[i];
      loss_at = FusedMulAdd(ra, ra, loss_at);
    }
    const double coef = kPrev ? FusedMulAdd(-in.keep, m[1] - b.targets[i], r) * inv_n : r * inv_n;
    sums[static_cast<size_t>(k) * kPoints] = coef;
    cursor[k] = outer[i];
  }
  estimate->resize(d);
  double* out = estimate->data();
  const double* before = kPrev ? in.before->data() : nullptr;
  for (int lo = 0; lo < d; lo += kStormTile) {
    const int hi = std::min(d, lo + kStormTile);
    if (kPrev) {
      for (int j = lo; j < hi; ++j) out[j] = in.keep * before[j];
    } else {
      for (int j = lo; j < hi; ++j) out[j] = 0.0;
    }
    for (int k = 0; k < n; ++k) {
      const int end = outer[in.view->rows.row(k) + 1];
      const double coef = sums[static_cast<size_t>(k) * kPoints];
      int e = cursor[k];
      for (; e < end && col[e] < hi; ++e) out[col[e]] = FusedMulAdd(coef, val[e], out[col[e]]);
      cursor[k] = e;
    }
  }
  return {0.5 * loss_x * inv_n, 0.5 * loss_at * inv_n};
}

template <bool kPrev, bool kAt>
StormPassOut StormDispatch(const StormPassIn& in, Vector* estimate, StormScratch* scratch) {
  if (in.view->batch->sparse_features && scratch != nullptr) {
    return StormWalkTiled<kPrev, kAt>(in, estimate, scratch);
  }
  estimate->resize(in.x->size());
  if (kPrev) {
    estimate->noalias() = in.keep * *in.before;
  } else {
    estimate->setZero();
  }
  return StormWalk<kPrev, kAt>(in, estimate->data());
}

}  // namespace

StormPassOut StormSquaredResidual(const StormPassIn& in, Vector* estimate, StormScratch* scratch) {
  if (in.view->rows.n == 0) {
    estimate->resize(in.x->size());
    if (in.prev != nullptr) {
      estimate->noalias() = in.keep * *in.before;
    } else {
      estimate->setZero();
    }
    return {};
  }
  if (in.prev != nullptr) {
    return in.at != nullptr ? StormDispatch<true, true>(in, estimate, scratch)
                            : StormDispatch<true, false>(in, estimate, scratch);
  }
  return in.at != nullptr ? StormDispatch<false, true>(in, estimate, scratch)
                          : StormDispatch<false, false>(in, estimate, scratch);
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

namespace {

typedef uint64_t Bits8 __attribute__((vector_size(64)));
typedef double Doubles8 __attribute__((vector_size(64)));
constexpr uint64_t kMagnitude = ~(uint64_t{1} << 63);

// Folds |v[0, 8)| into the lanes: the bit patterns' max and the sums.
inline void AbsMaxSum8(const double* v, Bits8* top, Doubles8* sum) {
  Bits8 bits;
  std::memcpy(&bits, v, sizeof(bits));
  bits &= kMagnitude;
  const Bits8 above = bits > *top;  // all ones where bits > top
  *top = (bits & above) | (*top & ~above);
  Doubles8 a;
  std::memcpy(&a, &bits, sizeof(a));
  *sum += a;
}

}  // namespace

void AbsMaxSum(const double* v, int n, double* max, double* sum) {
  // Four groups of eight lanes side by side (entry j goes to lane j mod 32
  // until the last whole 32, then the rest of the 8-blocks to the first
  // group and the tail to its lanes), folded pairwise at the end: four
  // independent chains of vector additions.  Written with vector types
  // (GCC and Clang; split into narrower registers without AVX-512) because
  // GCC vectorizes a loop over an array of lanes across j instead and adds
  // the sums one by one (issue 23).  The max is taken on the bit patterns
  // without the sign: for non-negative doubles their order is the numbers'
  // order, and a NaN's pattern lies above +inf's, so a NaN shows as a max
  // that is not <= any bound (the input check's test).
  Bits8 t0 = {}, t1 = {}, t2 = {}, t3 = {};
  Doubles8 s0 = {}, s1 = {}, s2 = {}, s3 = {};
  int j = 0;
  for (; j + 32 <= n; j += 32) {
    AbsMaxSum8(v + j, &t0, &s0);
    AbsMaxSum8(v + j + 8, &t1, &s1);
    AbsMaxSum8(v + j + 16, &t2, &s2);
    AbsMaxSum8(v + j + 24, &t3, &s3);
  }
  for (; j + 8 <= n; j += 8) AbsMaxSum8(v + j, &t0, &s0);
  uint64_t t[4][8];
  double l[4][8];
  const Bits8* tops[4] = {&t0, &t1, &t2, &t3};
  const Doubles8* sums[4] = {&s0, &s1, &s2, &s3};
  for (int g = 0; g < 4; ++g) {
    std::memcpy(t[g], tops[g], sizeof(t[g]));
    std::memcpy(l[g], sums[g], sizeof(l[g]));
  }
  for (int q = 0; j < n; ++j, ++q) {
    uint64_t bits;
    std::memcpy(&bits, v + j, sizeof(bits));
    bits &= kMagnitude;
    t[0][q] = bits > t[0][q] ? bits : t[0][q];
    double a;
    std::memcpy(&a, &bits, sizeof(a));
    l[0][q] += a;
  }
  uint64_t m = 0;
  double lane[8];
  for (int q = 0; q < 8; ++q) {
    for (int g = 0; g < 4; ++g) m = t[g][q] > m ? t[g][q] : m;
    lane[q] = (l[0][q] + l[1][q]) + (l[2][q] + l[3][q]);
  }
  std::memcpy(max, &m, sizeof(m));
  *sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

void RowAbsMaxSum(const Batch& b, int i, double* max, double* sum) {
  *max = 0.0;
  *sum = 0.0;
  if (b.sparse_features) {
    // One vectorized walk, as for dense rows (a scalar sum was a chain of
    // dependent additions: ~6% of an IR-SCG step on CSR rows, issue 28).
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    if (end > begin) AbsMaxSum(b.csr.valuePtr() + begin, end - begin, max, sum);
  } else if (b.cols() > 0) {
    AbsMaxSum(b.DenseRow(i), b.cols(), max, sum);
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
  // Few columns: the Gram matrix once (n d^2), then each iteration d^2
  // instead of a pass over the rows (2 n d): AGM-BiO estimates both
  // constants on its windows every step, up to 100 passes each (90% of its
  // small step, issue 28 item 3).  The same iteration; only each product's
  // summation order differs (w = (G v) / n with G = sum_i a_i a_i^T, rows
  // in order, instead of sum_i a_i (a_i . v) / n), so the estimate moves
  // at rounding level.
  const bool gram = cols <= kGramColumns && cols <= 2 * view.rows.n;
  double g[kGramColumns * kGramColumns];
  if (gram) {
    std::fill(g, g + cols * cols, 0.0);
    for (int k = 0; k < view.rows.n; ++k) {
      const int i = view.rows.row(k);
      if (b.sparse_features) {
        const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
        for (int p = begin; p < end; ++p) {
          const double ap = b.csr.valuePtr()[p];
          double* gp = g + b.csr.innerIndexPtr()[p] * cols;
          for (int q = begin; q < end; ++q)
            gp[b.csr.innerIndexPtr()[q]] += ap * b.csr.valuePtr()[q];
        }
      } else {
        const double* a = b.DenseRow(i);
        for (int p = 0; p < cols; ++p) {
          for (int q = 0; q < cols; ++q) g[p * cols + q] += a[p] * a[q];
        }
      }
    }
  }
  double quotient = 0.0;
  for (int it = 0; it < kPowerIterations; ++it) {
    if (gram) {
      for (int p = 0; p < cols; ++p) {
        double acc = 0.0;
        for (int q = 0; q < cols; ++q) acc += g[p * cols + q] * (*v)[q];
        (*w)[p] = acc * inv_n;
      }
    } else {
      w->setZero();
      for (int k = 0; k < view.rows.n; ++k) {
        const int i = view.rows.row(k);
        RowAxpy(b, i, RowDot(b, i, v->data()) * inv_n, w->data());
      }
    }
    const double next = v->dot(*w);  // Rayleigh quotient, ||v|| = 1
    // The squares of (1/n) G v overflow for rows near the input bound
    // (lambda_max ~ 1e300): norm() is then inf, v would become 0 and the
    // first quotient be kept, ~half of lambda_max, which made AGM-BiO's run
    // on g diverge (step 1/L_g past 2/lambda_max).  stableNorm only then,
    // so that every other estimate keeps its bits.
    double norm = w->norm();
    if (std::isinf(norm)) norm = w->stableNorm();
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
