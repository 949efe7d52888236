// Products over a batch for small shapes: a few rows, tens of
// features, a handful of classes.  There Eigen's GEMM spends as much time
// packing its operands and choosing blocks as multiplying (a perf profile of
// the d = 20, C = 3, 8 + 8 row round: gebp_kernel 15.6%, gemm_pack_lhs/rhs
// 11.6%; bench/RESULTS.md); these loops read the operands in place,
// with the column count a compile-time constant for the common widths so that
// the accumulators live in registers.
//
// Summation order (fixed, independent of the machine's vector width): every
// entry of Z = A W is the sequential sum over features f = 0, 1, ..., d - 1,
// and every entry of G = A^T R the sequential sum over rows i = 0, ..., n - 1,
// each started from 0.  (Eigen's GEMM sums in an order of its own blocking;
// the two agree to rounding, |error| <= d eps sum_f |a_f w_f| for either.)
// Each step is one fused multiply-add (MulAdd, small_gemm_lanes.h) where the CPU has FMA
// (-march=native builds), so the rounding of every entry is defined by the
// source, not by what the compiler chose to contract or vectorize.  Four
// rows (features) are accumulated side by side for instruction-level
// parallelism; that does not change any entry's order.  The vectorized
// variants (rows side by side from A's transpose, features side by
// side for A^T R, a pair of models at once) keep every entry's order too,
// so they are bit-equal to the loops above.  The bias row of a gradient
// (the column sums of R) is likewise the sequential sum from row 0; it
// replaced Eigen's colwise().sum(), which sums in its own order where it
// vectorizes across columns (seen at C = 10 on 8-row sf2obo draws: those
// trajectories moved at rounding level, every test unchanged).
#ifndef F2OBO_CORE_KERNELS_SMALL_GEMM_H_
#define F2OBO_CORE_KERNELS_SMALL_GEMM_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/kernels/small_gemm_lanes.h"
#include "core/types.h"

namespace f2obo {

// Whether a product of an n x d batch with a d x c model counts as small:
// the shapes where the loops below beat Eigen's blocked GEMM (measured with
// bench/round_benchmark's BM_Shape and BM_GemmRoof).  Since the
// vectorized variants, that includes the medium round (32 x 100 x 10, its
// pair 2C = 20): 107 -> 46 us a round, below the 49 us of its 38 products
// as Eigen GEMMs (Eigen packs its operands for every product).
inline bool SmallProductShape(int64_t n, int64_t d, int64_t c) {
  return c <= 20 && n * d * c <= 65536;
}

namespace small_gemm {

// Added to each entry g_fj of G_m = A^T R_m as it is stored (optional): the
// gradient of (mu0/2) ||W_m||^2 + (1/2) sum_f x_f ||row f of W_m||^2, as
// g = MulAdd(x_f, w, MulAdd(mu0, w, g)) with w = W_m's entry (f, j): the
// roundings of the separate passes "g += mu0 w", then "g += x_f w".
struct RidgeEpilogue {
  double mu0 = 0.0;
  const double* x = nullptr;                // d
  const double* w[2] = {nullptr, nullptr};  // W_m, d x c, row stride c
  double Apply(int m, int64_t f, int64_t c, int64_t j, double g) const {
    const double wv = w[m][f * c + j];
    return MulAdd(x[f], wv, MulAdd(mu0, wv, g));
  }
};

// z (n x C, row stride ldz) = a (n x d, row stride lda) w (d x C, row stride ldw).
template <int C>
void Product(const double* a, int64_t lda, int64_t n, int64_t d, const double* w, int64_t ldw,
             double* z, int64_t ldz) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    double acc[4][C] = {};
    const double* a0 = a + i * lda;
    for (int64_t f = 0; f < d; ++f) {
      const double* wf = w + f * ldw;
      for (int r = 0; r < 4; ++r) {
        const double x = a0[r * lda + f];
        for (int j = 0; j < C; ++j) acc[r][j] = MulAdd(x, wf[j], acc[r][j]);
      }
    }
    for (int r = 0; r < 4; ++r) {
      for (int j = 0; j < C; ++j) z[(i + r) * ldz + j] = acc[r][j];
    }
  }
  for (; i < n; ++i) {
    double acc[C] = {};
    const double* ai = a + i * lda;
    for (int64_t f = 0; f < d; ++f) {
      const double* wf = w + f * ldw;
      for (int j = 0; j < C; ++j) acc[j] = MulAdd(ai[f], wf[j], acc[j]);
    }
    for (int j = 0; j < C; ++j) z[i * ldz + j] = acc[j];
  }
}

// z_m (n x C, row stride ldz) = A W_m for M models (M = 1 or the pair's 2),
// from A's transpose at (d x n, row stride ldt): kRows rows side by side, so
// each step is one vector of A^T's row f times a broadcast weight, and the
// pair's 2C sums are independent chains for the pipeline.  Every entry is
// still the sequential sum over f from 0: bit-equal to Product.  With bias,
// each model's row d (its C biases, after the weights) is added to the sum
// as it is stored: a logistic model's logits, as Product then z += b.
template <int C, int M>
void ProductFromTranspose(const double* at, int64_t ldt, int64_t n, int64_t d,
                          const double* const* w, int64_t ldw, double* const* z, int64_t ldz,
                          bool bias) {
  double b[M * C];
  for (int m = 0; m < M; ++m) {
    for (int j = 0; j < C; ++j) b[m * C + j] = bias ? w[m][d * ldw + j] : 0.0;
  }
  constexpr int kRows = 8;
  using L = Lanes<kRows>;
  int64_t i = 0;
  for (; i + kRows <= n; i += kRows) {
    L acc[M * C];
    for (L& l : acc) l = L::Zero();
    for (int64_t f = 0; f < d; ++f) {
      const L af = L::Load(at + f * ldt + i);
      for (int m = 0; m < M; ++m) {
        const double* wf = w[m] + f * ldw;
        for (int j = 0; j < C; ++j) acc[m * C + j] = L::Fma(af, wf[j], acc[m * C + j]);
      }
    }
#ifdef F2OBO_SMALL_GEMM_AVX512
    // Each model's classes 8 at a time, plus the bias, one row per lane.
    for (int m = 0; m < M; ++m) {
      for (int j0 = 0; j0 < C; j0 += 8) {
        const int k_count = C - j0 < 8 ? C - j0 : 8;
        __m512d v[8];
        for (int k = 0; k < k_count; ++k) {
          v[k] = acc[m * C + j0 + k].v;
          if (bias) v[k] = _mm512_add_pd(v[k], _mm512_set1_pd(b[m * C + j0 + k]));
        }
        StoreTransposed(v, k_count, kRows, z[m] + i * ldz + j0, ldz, Unchanged);
      }
    }
#else
    double out[M * C][kRows];
    for (int k = 0; k < M * C; ++k) acc[k].Store(out[k]);
    for (int m = 0; m < M; ++m) {
      for (int q = 0; q < kRows; ++q) {
        for (int j = 0; j < C; ++j) {
          const double v = out[m * C + j][q];
          z[m][(i + q) * ldz + j] = bias ? v + b[m * C + j] : v;
        }
      }
    }
#endif
  }
  for (; i < n; ++i) {
    for (int m = 0; m < M; ++m) {
      double acc[C] = {};
      for (int64_t f = 0; f < d; ++f) {
        const double x = at[f * ldt + i];
        const double* wf = w[m] + f * ldw;
        for (int j = 0; j < C; ++j) acc[j] = MulAdd(x, wf[j], acc[j]);
      }
      for (int j = 0; j < C; ++j) z[m][i * ldz + j] = bias ? acc[j] + b[m * C + j] : acc[j];
    }
  }
}

// g_m (d x C, row stride ldg) = a^T (d x n) r_m (n x C, row stride ldr) for
// M right-hand sides (M = 1 or the pair's 2).  kF features side by side
// (contiguous in a's rows, so one vector load per row), each entry the
// sequential sum over rows i from 0 (kF = 16: two vectors per sum).
template <int C, int M, int kF>
int64_t TransposeProductBlocks(const double* a, int64_t lda, int64_t n, int64_t f, int64_t d,
                               const double* const* r, int64_t ldr, double* const* g, int64_t ldg,
                               const RidgeEpilogue* epi) {
  constexpr int kV = kF > 8 ? 8 : kF;  // lanes per vector
  constexpr int kN = kF / kV;          // vectors per block
  using L = Lanes<kV>;
  for (; f + kF <= d; f += kF) {
    L acc[M * C][kN];
    for (auto& row : acc) {
      for (L& l : row) l = L::Zero();
    }
    for (int64_t i = 0; i < n; ++i) {
      L ai[kN];
      for (int v = 0; v < kN; ++v) ai[v] = L::Load(a + i * lda + f + v * kV);
      for (int m = 0; m < M; ++m) {
        const double* ri = r[m] + i * ldr;
        for (int j = 0; j < C; ++j) {
          const double x = ri[j];
          for (int v = 0; v < kN; ++v) acc[m * C + j][v] = L::Fma(ai[v], x, acc[m * C + j][v]);
        }
      }
    }
#ifdef F2OBO_SMALL_GEMM_AVX512
    if constexpr (kV == 8) {
      // Each model's classes 8 at a time, one row of G (a feature) per
      // lane, the ridge applied to the whole row: w's row by a masked load,
      // the same two fmas per entry as RidgeEpilogue::Apply.
      for (int m = 0; m < M; ++m) {
        for (int v = 0; v < kN; ++v) {
          const int64_t f0 = f + v * kV;
          for (int j0 = 0; j0 < C; j0 += 8) {
            const int k_count = C - j0 < 8 ? C - j0 : 8;
            __m512d col[8];
            for (int k = 0; k < k_count; ++k) col[k] = acc[m * C + j0 + k][v].v;
            auto ridge = [&](int q, __m512d row, __mmask8 mask) {
              if (epi == nullptr) return row;
              const int64_t fq = f0 + q;
              const __m512d w = _mm512_maskz_loadu_pd(mask, epi->w[m] + fq * C + j0);
              row = _mm512_fmadd_pd(_mm512_set1_pd(epi->mu0), w, row);
              return _mm512_fmadd_pd(_mm512_set1_pd(epi->x[fq]), w, row);
            };
            StoreTransposed(col, k_count, kV, g[m] + f0 * ldg + j0, ldg, ridge);
          }
        }
      }
      continue;
    }
#endif
    double out[M * C][kF];
    for (int k = 0; k < M * C; ++k) {
      for (int v = 0; v < kN; ++v) acc[k][v].Store(out[k] + v * kV);
    }
    for (int m = 0; m < M; ++m) {
      for (int q = 0; q < kF; ++q) {
        for (int j = 0; j < C; ++j) {
          const double v = out[m * C + j][q];
          g[m][(f + q) * ldg + j] = epi == nullptr ? v : epi->Apply(m, f + q, C, j, v);
        }
      }
    }
  }
  return f;
}

// b_m = the column sums of r_m (n x C, row stride ldr), each the sequential
// sum from row 0 (the bias row of A^T R for A with a column of ones), plus
// epi's mu0 b (w_m's entries after its d x C weights) if given.
template <int C, int M>
void ColumnSums(const double* const* r, int64_t ldr, int64_t n, int64_t d, double* const* b,
                const RidgeEpilogue* epi) {
  double acc[M * C];
  for (int m = 0; m < M; ++m) {
    for (int j = 0; j < C; ++j) acc[m * C + j] = n > 0 ? r[m][j] : 0.0;
  }
  for (int64_t i = 1; i < n; ++i) {
    for (int m = 0; m < M; ++m) {
      for (int j = 0; j < C; ++j) acc[m * C + j] += r[m][i * ldr + j];
    }
  }
  for (int m = 0; m < M; ++m) {
    for (int j = 0; j < C; ++j) {
      const double v = acc[m * C + j];
      b[m][j] = epi == nullptr ? v : MulAdd(epi->mu0, epi->w[m][d * C + j], v);
    }
  }
}

template <int C, int M = 1>
void TransposeProduct(const double* a, int64_t lda, int64_t n, int64_t d, const double* const* r,
                      int64_t ldr, double* const* g, int64_t ldg,
                      const RidgeEpilogue* epi = nullptr) {
  // 16 features at a time (two vectors per sum) while the sums fit in
  // registers: twice the independent chains of an 8-feature block.
  int64_t f = 0;
  if constexpr (M * C <= 12)
    f = TransposeProductBlocks<C, M, 16>(a, lda, n, f, d, r, ldr, g, ldg, epi);
  f = TransposeProductBlocks<C, M, 8>(a, lda, n, f, d, r, ldr, g, ldg, epi);
  f = TransposeProductBlocks<C, M, 4>(a, lda, n, f, d, r, ldr, g, ldg, epi);
  TransposeProductBlocks<C, M, 1>(a, lda, n, f, d, r, ldr, g, ldg, epi);
}

// The same for a run-time column count, in the same order.
inline void ProductAny(const double* a, int64_t lda, int64_t n, int64_t d, const double* w,
                       int64_t ldw, int64_t c, double* z, int64_t ldz) {
  for (int64_t i = 0; i < n; ++i) {
    double* zi = z + i * ldz;
    for (int64_t j = 0; j < c; ++j) zi[j] = 0.0;
    for (int64_t f = 0; f < d; ++f) {
      const double x = a[i * lda + f];
      const double* wf = w + f * ldw;
      for (int64_t j = 0; j < c; ++j) zi[j] = MulAdd(x, wf[j], zi[j]);
    }
  }
}

inline void TransposeProductAny(const double* a, int64_t lda, int64_t n, int64_t d, const double* r,
                                int64_t ldr, int64_t c, double* g, int64_t ldg) {
  for (int64_t f = 0; f < d; ++f) {
    double* gf = g + f * ldg;
    for (int64_t j = 0; j < c; ++j) gf[j] = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = a[i * lda + f];
      const double* ri = r + i * ldr;
      for (int64_t j = 0; j < c; ++j) gf[j] = MulAdd(x, ri[j], gf[j]);
    }
  }
}

}  // namespace small_gemm

// Calls body(std::integral_constant<int, k>) for the compiled widths k,
// body(std::integral_constant<int, 0>) for any other c: the one list of
// widths both products unroll.
template <typename Body>
void DispatchWidth(int64_t c, Body&& body) {
  switch (c) {
#define F2OBO_SMALL_CASE(k) \
  case k:                   \
    return body(std::integral_constant<int, k>());
    F2OBO_SMALL_CASE(2)
    F2OBO_SMALL_CASE(3)
    F2OBO_SMALL_CASE(4)
    F2OBO_SMALL_CASE(5)
    F2OBO_SMALL_CASE(6)
    F2OBO_SMALL_CASE(8)
    F2OBO_SMALL_CASE(10)
    F2OBO_SMALL_CASE(20)
#undef F2OBO_SMALL_CASE
    default:
      return body(std::integral_constant<int, 0>());
  }
}

// Z = A W for row-major operands (Eigen maps or blocks of them).
template <typename A, typename W, typename Z>
void SmallProduct(const A& a, const W& w, Z&& z) {
  const int64_t n = a.rows(), d = a.cols(), c = w.cols();
  const double* pa = a.data();
  const double* pw = w.data();
  double* pz = z.data();
  const int64_t lda = a.outerStride(), ldw = w.outerStride(), ldz = z.outerStride();
  DispatchWidth(c, [&](auto k) {
    if constexpr (k() == 0) {
      small_gemm::ProductAny(pa, lda, n, d, pw, ldw, c, pz, ldz);
    } else {
      small_gemm::Product<k()>(pa, lda, n, d, pw, ldw, pz, ldz);
    }
  });
}

// G = A^T R for row-major operands.
template <typename A, typename R, typename G>
void SmallTransposeProduct(const A& a, const R& r, G&& g) {
  const int64_t n = a.rows(), d = a.cols(), c = r.cols();
  const double* pa = a.data();
  const double* pr = r.data();
  double* pg = g.data();
  const int64_t lda = a.outerStride(), ldr = r.outerStride(), ldg = g.outerStride();
  DispatchWidth(c, [&](auto k) {
    if constexpr (k() == 0) {
      small_gemm::TransposeProductAny(pa, lda, n, d, pr, ldr, c, pg, ldg);
    } else {
      small_gemm::TransposeProduct<k()>(pa, lda, n, d, &pr, ldr, &pg, ldg);
    }
  });
}

// Z_m = A W_m for M models (d x c each, row stride c) from A's transpose
// at (d x n, row stride n), each Z_m n x c with row stride ldz: bit-equal to
// SmallProduct of A with each W_m, vectorized across rows.  With bias, plus
// the C entries that follow W_m (Z_m + 1 b_m^T, rounded as a separate add).
template <int M>
void SmallProductsFromTranspose(const double* at, int64_t n, int64_t d, const double* const* w,
                                int64_t c, double* const* z, int64_t ldz, bool bias = false) {
  DispatchWidth(c, [&](auto k) {
    if constexpr (k() == 0) {
      for (int m = 0; m < M; ++m) {
        for (int64_t i = 0; i < n; ++i) {
          double* zi = z[m] + i * ldz;
          for (int64_t j = 0; j < c; ++j) zi[j] = 0.0;
          for (int64_t f = 0; f < d; ++f) {
            const double x = at[f * n + i];
            for (int64_t j = 0; j < c; ++j) zi[j] = small_gemm::MulAdd(x, w[m][f * c + j], zi[j]);
          }
          for (int64_t j = 0; bias && j < c; ++j) zi[j] += w[m][d * c + j];
        }
      }
    } else {
      small_gemm::ProductFromTranspose<k(), M>(at, n, n, d, w, c, z, ldz, bias);
    }
  });
}

// G_m = [A 1]^T R_m for M right-hand sides (n x c, row stride ldr): each
// G_m is d x c with row stride c (bit-equal to SmallTransposeProduct with
// R_m) followed by the c column sums of R_m (ColumnSums' order), with epi
// (if given) on every entry: a logistic model's weight and bias gradients.
template <int M>
void SmallGradientProducts(const double* a, int64_t lda, int64_t n, int64_t d,
                           const double* const* r, int64_t ldr, int64_t c, double* const* g,
                           const small_gemm::RidgeEpilogue* epi = nullptr) {
  DispatchWidth(c, [&](auto k) {
    double* b[M];
    for (int m = 0; m < M; ++m) b[m] = g[m] + d * c;
    if constexpr (k() == 0) {
      for (int m = 0; m < M; ++m) {
        small_gemm::TransposeProductAny(a, lda, n, d, r[m], ldr, c, g[m], c);
        for (int64_t f = 0; epi != nullptr && f < d; ++f) {
          for (int64_t j = 0; j < c; ++j) g[m][f * c + j] = epi->Apply(m, f, c, j, g[m][f * c + j]);
        }
        for (int64_t j = 0; j < c; ++j) {
          double acc = n > 0 ? r[m][j] : 0.0;
          for (int64_t i = 1; i < n; ++i) acc += r[m][i * ldr + j];
          b[m][j] = epi == nullptr ? acc : small_gemm::MulAdd(epi->mu0, epi->w[m][d * c + j], acc);
        }
      }
    } else {
      small_gemm::TransposeProduct<k(), M>(a, lda, n, d, r, ldr, g, c, epi);
      small_gemm::ColumnSums<k(), M>(r, ldr, n, d, b, epi);
    }
  });
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SMALL_GEMM_H_
