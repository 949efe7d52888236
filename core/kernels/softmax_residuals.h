// Logits, softmax and cross-entropy residual of a small dense block in one
// pass: the residuals R = (softmax(A W + 1 b^T) - E) / n that
// a gradient A^T R needs, computed from the logits while they are still in
// the product's accumulators (8 rows per vector, one vector per class)
// instead of storing Z, reading it back row by row for the softmax
// (softmax_rows.h) and once more for the residual.  At the small round's
// shape (C = 3) those row loops were 30-40% of the round (perf:
// DenseGradYGPair and DenseCrossEntropy self time).
//
// Bit-equal to SmallProductsFromTranspose(bias) + SoftmaxRowsInPlace +
// "r = (p - e_l) / n": per row the same operations in the same order (the
// sequential fma sums of the logits, + b, the running maximum with `>`, the
// shift, ExpNonPositive lane by lane, the sum from j = 0, 1 / s, p = e / s,
// a non-finite maximum making the row NaN, (p - [j = l]) * inv_n), each
// lane a row.  AVX-512 (F, DQ) only (the rows are the 8 lanes of a vector); the
// callers keep the unfused path elsewhere.
#ifndef F2OBO_CORE_KERNELS_SOFTMAX_RESIDUALS_H_
#define F2OBO_CORE_KERNELS_SOFTMAX_RESIDUALS_H_

#include <cmath>
#include <cstdint>
#include <limits>

#include "core/kernels/small_gemm.h"
#include "core/kernels/softmax_rows.h"

namespace f2obo {

#if defined(F2OBO_SMALL_GEMM_AVX512) && defined(__AVX512DQ__)
#define F2OBO_SOFTMAX_RESIDUALS 1
namespace small_gemm {

// ExpNonPositive on 8 lanes: its operations in its order (each fma one
// rounding, nearbyint as round-to-nearest-even), so every lane is bit-equal
// to ExpNonPositive of it.
inline __m512d ExpNonPositive8(__m512d x) {
  const __m512d lowest = _mm512_set1_pd(-708.0);
  const __mmask8 tiny = _mm512_cmp_pd_mask(x, lowest, _CMP_LT_OQ);  // NaN: false
  const __m512d xc = _mm512_mask_blend_pd(tiny, x, lowest);
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(xc, _mm512_set1_pd(1.4426950408889634074)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(6.93147180369123816490e-01), xc);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(1.90821492927058770002e-10), r);
  const double coef[] = {1.0 / 479001600.0,
                         1.0 / 39916800.0,
                         1.0 / 3628800.0,
                         1.0 / 362880.0,
                         1.0 / 40320.0,
                         1.0 / 5040.0,
                         1.0 / 720.0,
                         1.0 / 120.0,
                         1.0 / 24.0,
                         1.0 / 6.0,
                         0.5,
                         1.0,
                         1.0};
  __m512d p = _mm512_set1_pd(1.0 / 6227020800.0);
  for (double c : coef) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
  const __m512d floor_k = _mm512_set1_pd(-1022.0);
  const __m512d kc = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(k, floor_k, _CMP_GE_OQ), floor_k, k);
  const __m512i bits =
      _mm512_slli_epi64(_mm512_add_epi64(_mm512_cvttpd_epi64(kc), _mm512_set1_epi64(1023)), 52);
  const __m512d v = _mm512_mul_pd(p, _mm512_castsi512_pd(bits));
  return _mm512_mask_blend_pd(tiny, v, _mm512_setzero_pd());
}

// acc[m C + j] = lanes q of sum_f A^T(f, i + q) w_m(f, j), the sequential
// fma sum from f = 0 (ProductFromTranspose's order); lanes outside `live`
// read A as 0.  Lanes<8>, not raw __m512d, and not inlined: otherwise
// GCC kept the medium pair's 2C = 20 accumulators in memory, storing every
// one each feature (perf).
template <int C, int M>
__attribute__((noinline)) void LogitsBlock(const double* at, int64_t ldt, int64_t i, __mmask8 live,
                                           int64_t d, const double* const* w, double* out) {
  using L = Lanes<8>;  // an array of raw __m512d stayed in memory (GCC 12)
  L acc[M * C];
#pragma GCC unroll 64
  for (L& a : acc) a = L::Zero();
  for (int64_t f = 0; f < d; ++f) {
    const L af{_mm512_maskz_loadu_pd(live, at + f * ldt + i)};
    for (int m = 0; m < M; ++m) {
      const double* wf = w[m] + f * C;
      for (int j = 0; j < C; ++j) acc[m * C + j] = L::Fma(af, wf[j], acc[m * C + j]);
    }
  }
  // One store per vector: a whole-array copy made GCC store all of them
  // every feature.
#pragma GCC unroll 64
  for (int k = 0; k < M * C; ++k) acc[k].Store(out + 8 * k);
}

// For the n rows of A, given as A^T (d x n, row stride ldt), and M models
// w[m] (d x C weights, row stride C, then C biases): r_m (n x C, row stride
// ldr) = (softmax(A W_m + 1 b_m^T) - E) * inv_n, E the rows' one-hot
// labels (label(i) in [0, C)), and, if ce is given, ce[i] = the
// cross-entropy of row i of model 0's logits (SoftmaxRowsInPlace's, NaN
// for a row whose maximum is not finite).
template <int C, int M, typename Label>
void SoftmaxResiduals(const double* at, int64_t ldt, int64_t n, int64_t d, const double* const* w,
                      const Label& label, double inv_n, double* const* r, int64_t ldr, double* ce) {
  constexpr int kRows = 8;
  const __m512d nan = _mm512_set1_pd(std::numeric_limits<double>::quiet_NaN());
  const __m512d inf = _mm512_set1_pd(std::numeric_limits<double>::infinity());
  for (int64_t i = 0; i < n; i += kRows) {
    const int rows = n - i < kRows ? static_cast<int>(n - i) : kRows;
    const __mmask8 live = static_cast<__mmask8>((1u << rows) - 1u);
    alignas(64) double logits[M * C * 8];
    LogitsBlock<C, M>(at, ldt, i, live, d, w, logits);
    alignas(64) int64_t lab[kRows] = {};
    for (int q = 0; q < rows; ++q) lab[q] = label(static_cast<int>(i + q));
    const __m512i labels = _mm512_load_si512(lab);
    for (int m = 0; m < M; ++m) {
      __m512d z[C];
      for (int j = 0; j < C; ++j) {
        z[j] = _mm512_add_pd(_mm512_load_pd(logits + 8 * (m * C + j)),
                             _mm512_set1_pd(w[m][d * C + j]));
      }
      __m512d mx = z[0];
      for (int j = 1; j < C; ++j) {
        mx = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(z[j], mx, _CMP_GT_OQ), mx, z[j]);
      }
      const bool with_ce = ce != nullptr && m == 0;
      __m512d loss = _mm512_setzero_pd();
      if (with_ce) {
        __m512d zl = z[0];
        for (int j = 1; j < C; ++j) {
          zl =
              _mm512_mask_blend_pd(_mm512_cmpeq_epi64_mask(labels, _mm512_set1_epi64(j)), zl, z[j]);
        }
        loss = _mm512_sub_pd(mx, zl);
      }
      __m512d s = _mm512_setzero_pd();
      for (int j = 0; j < C; ++j) {
        z[j] = ExpNonPositive8(_mm512_sub_pd(z[j], mx));
        s = _mm512_add_pd(s, z[j]);
      }
      const __m512d inv = _mm512_div_pd(_mm512_set1_pd(1.0), s);
      const __mmask8 finite = _mm512_cmp_pd_mask(_mm512_abs_pd(mx), inf, _CMP_LT_OQ);
      const __m512d scale = _mm512_set1_pd(inv_n);
      for (int j = 0; j < C; ++j) {
        const __m512d p = _mm512_mask_blend_pd(finite, nan, _mm512_mul_pd(z[j], inv));
        const __mmask8 hot = _mm512_cmpeq_epi64_mask(labels, _mm512_set1_epi64(j));
        z[j] =
            _mm512_mul_pd(_mm512_sub_pd(p, _mm512_maskz_mov_pd(hot, _mm512_set1_pd(1.0))), scale);
      }
      for (int j0 = 0; j0 < C; j0 += 8) {
        StoreTransposed(z + j0, C - j0 < 8 ? C - j0 : 8, rows, r[m] + i * ldr + j0, ldr, Unchanged);
      }
      if (with_ce) {
        alignas(64) double l[kRows], sums[kRows];
        _mm512_store_pd(l, loss);
        _mm512_store_pd(sums, s);
        for (int q = 0; q < rows; ++q) {
          ce[i + q] = (finite >> q) & 1 ? l[q] + std::log(sums[q])
                                        : std::numeric_limits<double>::quiet_NaN();
        }
      }
    }
  }
}

}  // namespace small_gemm
#endif

// SoftmaxResiduals for the compiled class counts; false (nothing written)
// where it is not compiled (another C, or no AVX-512): the caller then
// takes the unfused path.
template <int M, typename Label>
bool SmallSoftmaxResiduals(const double* at, int64_t n, int64_t d, const double* const* w,
                           int64_t c, const Label& label, double inv_n, double* const* r,
                           int64_t ldr, double* ce) {
#ifdef F2OBO_SOFTMAX_RESIDUALS
  bool done = false;
  DispatchWidth(c, [&](auto k) {
    if constexpr (k() != 0) {
      small_gemm::SoftmaxResiduals<k(), M>(at, n, n, d, w, label, inv_n, r, ldr, ce);
      done = true;
    }
  });
  return done;
#else
  (void)at, (void)n, (void)d, (void)w, (void)c, (void)label, (void)inv_n, (void)r, (void)ldr;
  (void)ce;
  return false;
#endif
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SOFTMAX_RESIDUALS_H_
