// The lanes of small_gemm.h's products: MulAdd, the one
// rounding every entry's sum takes per step; Lanes<W>, W such sums side by
// side in vector registers; and, on AVX-512, the in-register 8 x 8
// transpose that stores a block of lanes as rows of the result.  Split
// from small_gemm.h (which includes this) to keep each file within 500
// lines; the products and their summation order are documented there.
#ifndef F2OBO_CORE_KERNELS_SMALL_GEMM_LANES_H_
#define F2OBO_CORE_KERNELS_SMALL_GEMM_LANES_H_

#include <cmath>
#include <cstdint>

#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace f2obo {
namespace small_gemm {

// acc + x w, rounded once where the CPU has FMA.
inline double MulAdd(double x, double w, double acc) {
#ifdef __FMA__
  return std::fma(x, w, acc);
#else
  return acc + x * w;
#endif
}

// W doubles side by side, each lane its own sum: Fma is MulAdd lane by
// lane (one rounding per lane where the CPU has FMA), so a loop over lanes
// computes every lane's entry in exactly the scalar order.  Written with
// intrinsics because GCC keeps arrays of accumulators of such loops in
// memory; without AVX the lanes are a plain array and MulAdd.
template <int W>
struct Lanes {
  double v[W];
  static Lanes Zero() { return Lanes{}; }
  static Lanes Load(const double* p) {
    Lanes l;
    for (int q = 0; q < W; ++q) l.v[q] = p[q];
    return l;
  }
  static Lanes Fma(const Lanes& a, double b, const Lanes& acc) {
    Lanes l;
    for (int q = 0; q < W; ++q) l.v[q] = MulAdd(a.v[q], b, acc.v[q]);
    return l;
  }
  void Store(double* p) const {
    for (int q = 0; q < W; ++q) p[q] = v[q];
  }
};
#if defined(__AVX2__) && defined(__FMA__)
template <>
struct Lanes<4> {
  __m256d v;
  static Lanes Zero() { return Lanes{_mm256_setzero_pd()}; }
  static Lanes Load(const double* p) { return Lanes{_mm256_loadu_pd(p)}; }
  static Lanes Fma(const Lanes& a, double b, const Lanes& acc) {
    return Lanes{_mm256_fmadd_pd(a.v, _mm256_set1_pd(b), acc.v)};
  }
  void Store(double* p) const { _mm256_storeu_pd(p, v); }
};
#endif
#if defined(__AVX512F__) && defined(__FMA__)
template <>
struct Lanes<8> {
  __m512d v;
  static Lanes Zero() { return Lanes{_mm512_setzero_pd()}; }
  static Lanes Load(const double* p) { return Lanes{_mm512_loadu_pd(p)}; }
  static Lanes Fma(const Lanes& a, double b, const Lanes& acc) {
    return Lanes{_mm512_fmadd_pd(a.v, _mm512_set1_pd(b), acc.v)};
  }
  void Store(double* p) const { _mm512_storeu_pd(p, v); }
};
#elif defined(__AVX2__) && defined(__FMA__)
template <>
struct Lanes<8> {
  __m256d lo, hi;
  static Lanes Zero() { return Lanes{_mm256_setzero_pd(), _mm256_setzero_pd()}; }
  static Lanes Load(const double* p) { return Lanes{_mm256_loadu_pd(p), _mm256_loadu_pd(p + 4)}; }
  static Lanes Fma(const Lanes& a, double b, const Lanes& acc) {
    const __m256d bb = _mm256_set1_pd(b);
    return Lanes{_mm256_fmadd_pd(a.lo, bb, acc.lo), _mm256_fmadd_pd(a.hi, bb, acc.hi)};
  }
  void Store(double* p) const {
    _mm256_storeu_pd(p, lo);
    _mm256_storeu_pd(p + 4, hi);
  }
};
#endif

#if defined(__AVX512F__) && defined(__FMA__)
#define F2OBO_SMALL_GEMM_AVX512 1
// Rows of 8 lanes at once: the products below keep their lanes
// across rows (A W) or features (A^T R), while their results are stored
// row-major with the classes contiguous, so each lane belongs to another
// row of the result.  Storing them entry by entry was ~45% of the medium
// round's A^T R (perf: one scalar store, and the ridge's two scalar fmas,
// per entry); an in-register 8 x 8 transpose turns K <= 8 class vectors
// into one masked row store per lane.  Only data movement: every stored
// value is the double it was.

// t[q] lane k = v[k] lane q for k < K (K <= 8, 0 beyond).
inline void Transpose8x8(const __m512d* v, int k_count, __m512d* t) {
  __m512d in[8];
  for (int k = 0; k < 8; ++k) in[k] = k < k_count ? v[k] : _mm512_setzero_pd();
  __m512d a[8], b[8];
  for (int k = 0; k < 4; ++k) {
    a[2 * k] = _mm512_unpacklo_pd(in[2 * k], in[2 * k + 1]);      // lanes (2p, 2p) of a pair
    a[2 * k + 1] = _mm512_unpackhi_pd(in[2 * k], in[2 * k + 1]);  // lanes (2p+1, 2p+1)
  }
  // 128-bit blocks regrouped: b holds lanes {q, q + 4} of four inputs.
  for (int k = 0; k < 2; ++k) {
    b[4 * k] = _mm512_shuffle_f64x2(a[4 * k], a[4 * k + 2], 0x88);
    b[4 * k + 1] = _mm512_shuffle_f64x2(a[4 * k], a[4 * k + 2], 0xDD);
    b[4 * k + 2] = _mm512_shuffle_f64x2(a[4 * k + 1], a[4 * k + 3], 0x88);
    b[4 * k + 3] = _mm512_shuffle_f64x2(a[4 * k + 1], a[4 * k + 3], 0xDD);
  }
  t[0] = _mm512_shuffle_f64x2(b[0], b[4], 0x88);
  t[4] = _mm512_shuffle_f64x2(b[0], b[4], 0xDD);
  t[2] = _mm512_shuffle_f64x2(b[1], b[5], 0x88);
  t[6] = _mm512_shuffle_f64x2(b[1], b[5], 0xDD);
  t[1] = _mm512_shuffle_f64x2(b[2], b[6], 0x88);
  t[5] = _mm512_shuffle_f64x2(b[2], b[6], 0xDD);
  t[3] = _mm512_shuffle_f64x2(b[3], b[7], 0x88);
  t[7] = _mm512_shuffle_f64x2(b[3], b[7], 0xDD);
}

// dst[q ld + k] = row(q, t, mask)'s lane k, t lane k = v[k] lane q, for
// k < k_count and q < rows (both <= 8); mask has the k_count low bits set.
template <typename Row>
inline void StoreTransposed(const __m512d* v, int k_count, int rows, double* dst, int64_t ld,
                            Row&& row) {
  __m512d t[8];
  Transpose8x8(v, k_count, t);
  const __mmask8 mask = static_cast<__mmask8>((1u << k_count) - 1u);
  for (int q = 0; q < rows; ++q) _mm512_mask_storeu_pd(dst + q * ld, mask, row(q, t[q], mask));
}

inline __m512d Unchanged(int, __m512d v, __mmask8) { return v; }
#endif

}  // namespace small_gemm
}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SMALL_GEMM_LANES_H_
