// Softmax of a block of rows at once, for the small dense shapes
// (small_gemm.h): with C = 3 classes a row has too few entries to
// vectorize, and libm's scalar exp was 16% of the small round.  Here the
// exponentials of the whole n x C block are one loop over an inline,
// branch-free exp that the compiler vectorizes; the numerics are those of
// softmax.h's SoftmaxInPlace (max subtracted first, non-finite rows NaN).
#ifndef F2OBO_CORE_KERNELS_SOFTMAX_ROWS_H_
#define F2OBO_CORE_KERNELS_SOFTMAX_ROWS_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace f2obo {

// exp(x) for x <= 0 (a logit minus its row's maximum): Cody-Waite reduction
// x = k ln 2 + r, |r| <= ln 2 / 2, the degree-13 Taylor polynomial of e^r
// (truncation below 1e-17 relative, so the result is within ~1 ulp of
// std::exp) and 2^k from its exponent bits.  x < -708 (results below
// DBL_MIN, which no softmax sum can see next to the maximum's 1) and -inf
// give 0; NaN gives NaN.  No branches, so a loop over it vectorizes.
inline double ExpNonPositive(double x) {
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // 32 bits: k kLn2Hi is exact
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double xc = x < -708.0 ? -708.0 : x;  // NaN stays NaN
  const double k = std::nearbyint(xc * kLog2e);
  double r = std::fma(-k, kLn2Hi, xc);
  r = std::fma(-k, kLn2Lo, r);
  double p = 1.0 / 6227020800.0;  // 1/13!
  p = std::fma(p, r, 1.0 / 479001600.0);
  p = std::fma(p, r, 1.0 / 39916800.0);
  p = std::fma(p, r, 1.0 / 3628800.0);
  p = std::fma(p, r, 1.0 / 362880.0);
  p = std::fma(p, r, 1.0 / 40320.0);
  p = std::fma(p, r, 1.0 / 5040.0);
  p = std::fma(p, r, 1.0 / 720.0);
  p = std::fma(p, r, 1.0 / 120.0);
  p = std::fma(p, r, 1.0 / 24.0);
  p = std::fma(p, r, 1.0 / 6.0);
  p = std::fma(p, r, 0.5);
  p = std::fma(p, r, 1.0);
  p = std::fma(p, r, 1.0);
  // 2^k, k in [-1022, 0] (NaN maps to an arbitrary valid k: p is NaN).
  const double kc = k >= -1022.0 ? k : -1022.0;
  const uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(kc) + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return x < -708.0 ? 0.0 : p * scale;
}

// Overwrites each of the n rows of z (c entries, row stride ld) with its
// softmax.  If ce is given, ce[i] = CE(z_i, label(i)) of the input row.
// A row whose maximum is not finite becomes NaN (and its ce NaN), as
// SoftmaxInPlace.  `scratch` holds n doubles.
template <typename Label>
void SoftmaxRowsInPlace(double* z, int n, int c, int ld, const Label& label, double* ce,
                        double* scratch) {
  for (int i = 0; i < n; ++i) {
    double* zi = z + static_cast<int64_t>(i) * ld;
    double m = zi[0];
    for (int j = 1; j < c; ++j) m = zi[j] > m ? zi[j] : m;
    scratch[i] = m;
    if (ce != nullptr) ce[i] = m - zi[label(i)];
    for (int j = 0; j < c; ++j) zi[j] -= m;  // inf - inf = NaN for a non-finite max
  }
  if (ld == c) {
    const int64_t total = static_cast<int64_t>(n) * c;
    for (int64_t k = 0; k < total; ++k) z[k] = ExpNonPositive(z[k]);
  } else {
    for (int i = 0; i < n; ++i) {
      double* zi = z + static_cast<int64_t>(i) * ld;
      for (int j = 0; j < c; ++j) zi[j] = ExpNonPositive(zi[j]);
    }
  }
  for (int i = 0; i < n; ++i) {
    double* zi = z + static_cast<int64_t>(i) * ld;
    if (!std::isfinite(scratch[i])) {
      for (int j = 0; j < c; ++j) zi[j] = std::numeric_limits<double>::quiet_NaN();
      if (ce != nullptr) ce[i] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    double s = 0.0;
    for (int j = 0; j < c; ++j) s += zi[j];
    // s >= 1 (the max contributes exp(0)), so the division is safe.
    const double inv = 1.0 / s;
    for (int j = 0; j < c; ++j) zi[j] *= inv;
    if (ce != nullptr) ce[i] += std::log(s);
  }
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SOFTMAX_ROWS_H_
