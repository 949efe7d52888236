// Products over a batch for small shapes (issue 28): a few rows, tens of
// features, a handful of classes.  There Eigen's GEMM spends as much time
// packing its operands and choosing blocks as multiplying (a perf profile of
// the d = 20, C = 3, 8 + 8 row round: gebp_kernel 15.6%, gemm_pack_lhs/rhs
// 11.6%; bench/RESULTS.md, issue 15); these loops read the operands in place,
// with the column count a compile-time constant for the common widths so that
// the accumulators live in registers.
//
// Summation order (fixed, independent of the machine's vector width): every
// entry of Z = A W is the sequential sum over features f = 0, 1, ..., d - 1,
// and every entry of G = A^T R the sequential sum over rows i = 0, ..., n - 1,
// each started from 0.  (Eigen's GEMM sums in an order of its own blocking;
// the two agree to rounding, |error| <= d eps sum_f |a_f w_f| for either.)
// Each step is one fused multiply-add (MulAdd below) where the CPU has FMA
// (-march=native builds), so the rounding of every entry is defined by the
// source, not by what the compiler chose to contract or vectorize.  Four
// rows (features) are accumulated side by side for instruction-level
// parallelism; that does not change any entry's order.
#ifndef F2OBO_CORE_KERNELS_SMALL_GEMM_H_
#define F2OBO_CORE_KERNELS_SMALL_GEMM_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/types.h"

namespace f2obo {

// Whether a product of an n x d batch with a d x c model counts as small:
// the shapes where the loops below beat Eigen's blocked GEMM (measured with
// bench/round_benchmark's BM_Shape and BM_GemmRoof, issue 28).
inline bool SmallProductShape(int64_t n, int64_t d, int64_t c) {
  return c <= 20 && n * d * c <= 16384;
}

namespace small_gemm {

// acc + x w, rounded once where the CPU has FMA.
inline double MulAdd(double x, double w, double acc) {
#ifdef __FMA__
  return std::fma(x, w, acc);
#else
  return acc + x * w;
#endif
}

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

// g (d x C, row stride ldg) = a^T (d x n) r (n x C, row stride ldr).
template <int C>
void TransposeProduct(const double* a, int64_t lda, int64_t n, int64_t d, const double* r,
                      int64_t ldr, double* g, int64_t ldg) {
  int64_t f = 0;
  for (; f + 4 <= d; f += 4) {
    double acc[4][C] = {};
    for (int64_t i = 0; i < n; ++i) {
      const double* ri = r + i * ldr;
      const double* ai = a + i * lda + f;
      for (int q = 0; q < 4; ++q) {
        for (int j = 0; j < C; ++j) acc[q][j] = MulAdd(ai[q], ri[j], acc[q][j]);
      }
    }
    for (int q = 0; q < 4; ++q) {
      for (int j = 0; j < C; ++j) g[(f + q) * ldg + j] = acc[q][j];
    }
  }
  for (; f < d; ++f) {
    double acc[C] = {};
    for (int64_t i = 0; i < n; ++i) {
      for (int j = 0; j < C; ++j) acc[j] = MulAdd(a[i * lda + f], r[i * ldr + j], acc[j]);
    }
    for (int j = 0; j < C; ++j) g[f * ldg + j] = acc[j];
  }
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
      small_gemm::TransposeProduct<k()>(pa, lda, n, d, pr, ldr, pg, ldg);
    }
  });
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SMALL_GEMM_H_
