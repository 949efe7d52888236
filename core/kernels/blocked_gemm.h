// Dense products over a batch in blocks small enough that Eigen never
// allocates.  Eigen's GEMM packs its operands into buffers on the stack up to
// EIGEN_STACK_ALLOCATION_LIMIT (128 KB) and on the heap beyond, which would
// break the families' contract of no allocation after Prepare() (e.g.
// A^T R with 256 rows of d = 784).  Blocks of at most kRowBlock rows x
// kFeatureBlock features x kColBlock columns keep every buffer under the
// limit for any shape (checked for d up to 20,000, 4096 rows and 200
// columns), at the speed of one large product.
//
// Results are deterministic for given shapes: the block order is fixed.
#ifndef F2OBO_CORE_KERNELS_BLOCKED_GEMM_H_
#define F2OBO_CORE_KERNELS_BLOCKED_GEMM_H_

#include <algorithm>

#include "core/types.h"

namespace f2obo {

inline constexpr int kRowBlock = 256;
inline constexpr int kFeatureBlock = 128;
inline constexpr int kColBlock = 40;

// Z = A W  (A: n x d, W: d x c, Z: n x c), Eigen expressions or maps.
template <typename A, typename W, typename Z>
void BlockedProduct(const A& a, const W& w, Z&& z) {
  const Eigen::Index n = a.rows(), d = a.cols(), c = w.cols();
  for (Eigen::Index i = 0; i < n; i += kRowBlock) {
    const Eigen::Index r = std::min<Eigen::Index>(kRowBlock, n - i);
    for (Eigen::Index k = 0; k < c; k += kColBlock) {
      const Eigen::Index cc = std::min<Eigen::Index>(kColBlock, c - k);
      auto out = z.block(i, k, r, cc);
      if (d == 0) out.setZero();
      for (Eigen::Index j = 0; j < d; j += kFeatureBlock) {
        const Eigen::Index f = std::min<Eigen::Index>(kFeatureBlock, d - j);
        if (j == 0) {
          out.noalias() = a.block(i, j, r, f) * w.block(j, k, f, cc);
        } else {
          out.noalias() += a.block(i, j, r, f) * w.block(j, k, f, cc);
        }
      }
    }
  }
}

// G = A^T R  (A: n x d, R: n x c, G: d x c).
template <typename A, typename R, typename G>
void BlockedTransposeProduct(const A& a, const R& r, G&& g) {
  const Eigen::Index n = a.rows(), d = a.cols(), c = r.cols();
  for (Eigen::Index j = 0; j < d; j += kFeatureBlock) {
    const Eigen::Index f = std::min<Eigen::Index>(kFeatureBlock, d - j);
    for (Eigen::Index k = 0; k < c; k += kColBlock) {
      const Eigen::Index cc = std::min<Eigen::Index>(kColBlock, c - k);
      auto out = g.block(j, k, f, cc);
      if (n == 0) out.setZero();
      for (Eigen::Index i = 0; i < n; i += kRowBlock) {
        const Eigen::Index rr = std::min<Eigen::Index>(kRowBlock, n - i);
        if (i == 0) {
          out.noalias() = a.block(i, j, rr, f).transpose() * r.block(i, k, rr, cc);
        } else {
          out.noalias() += a.block(i, j, rr, f).transpose() * r.block(i, k, rr, cc);
        }
      }
    }
  }
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_BLOCKED_GEMM_H_
