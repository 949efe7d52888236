// core/families/small_gemm.h: the small-shape products against the order
// they document (every entry a sequential sum from 0, over features for
// A W, over rows for A^T R), bit for bit, and against Eigen's product to
// rounding; every compiled-in column count and a run-time one, contiguous
// and strided (a block of a wider matrix, as the logits pair's halves).
#include "core/families/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/families/blocked_gemm.h"

namespace f2obo {
namespace {

RowMatrix Random(int r, int c, std::mt19937_64& rng) {
  std::normal_distribution<double> n01;
  return RowMatrix::NullaryExpr(r, c, [&] { return n01(rng); });
}

// The documented order, written out.
RowMatrix OrderedProduct(const RowMatrix& a, const RowMatrix& w) {
  RowMatrix z(a.rows(), w.cols());
  for (int i = 0; i < a.rows(); ++i) {
    for (int j = 0; j < w.cols(); ++j) {
      double acc = 0.0;
      for (int f = 0; f < a.cols(); ++f) acc = small_gemm::MulAdd(a(i, f), w(f, j), acc);
      z(i, j) = acc;
    }
  }
  return z;
}

TEST(SmallGemm, ProductsSumInTheDocumentedOrderAndAgreeWithEigen) {
  std::mt19937_64 rng(28);
  for (int c : {2, 3, 4, 5, 6, 7, 8, 10, 20}) {
    for (int n : {1, 3, 4, 8, 9}) {
      for (int d : {1, 5, 20, 33}) {
        const RowMatrix a = Random(n, d, rng), w = Random(d, c, rng), r = Random(n, c, rng);
        RowMatrix z(n, c), g(d, c);
        SmallProduct(Eigen::Map<const RowMatrix>(a.data(), n, d),
                     Eigen::Map<const RowMatrix>(w.data(), d, c),
                     Eigen::Map<RowMatrix>(z.data(), n, c));
        SmallTransposeProduct(Eigen::Map<const RowMatrix>(a.data(), n, d),
                              Eigen::Map<const RowMatrix>(r.data(), n, c),
                              Eigen::Map<RowMatrix>(g.data(), d, c));
        const RowMatrix at = a.transpose();
        EXPECT_TRUE(z == OrderedProduct(a, w)) << "n=" << n << " d=" << d << " c=" << c;
        EXPECT_TRUE(g == OrderedProduct(at, r)) << "n=" << n << " d=" << d << " c=" << c;
        const RowMatrix ze = a * w, ge = at * r;
        EXPECT_LE((z - ze).cwiseAbs().maxCoeff(), 1e-13 * (1.0 + a.cwiseAbs().maxCoeff() * d));
        EXPECT_LE((g - ge).cwiseAbs().maxCoeff(), 1e-13 * (1.0 + a.cwiseAbs().maxCoeff() * n));
        // Into and from the halves of an n x 2c block (row stride 2c).
        RowMatrix pair = RowMatrix::Constant(n, 2 * c, -7.0);
        Eigen::Map<RowMatrix> pm(pair.data(), n, 2 * c);
        SmallProduct(Eigen::Map<const RowMatrix>(a.data(), n, d),
                     Eigen::Map<const RowMatrix>(w.data(), d, c), pm.rightCols(c));
        EXPECT_TRUE(pair.rightCols(c) == z);
        EXPECT_TRUE((pair.leftCols(c).array() == -7.0).all());
        RowMatrix g2(d, c);
        SmallTransposeProduct(Eigen::Map<const RowMatrix>(a.data(), n, d), pm.rightCols(c),
                              Eigen::Map<RowMatrix>(g2.data(), d, c));
        EXPECT_TRUE(g2 == OrderedProduct(at, z));
      }
    }
  }
}

TEST(SmallGemm, TheSmallShapesAreTheBenchmarksSmallRoundNotItsMedium) {
  EXPECT_TRUE(SmallProductShape(8, 20, 6));      // d = 20, C = 3 pair, 8 rows
  EXPECT_FALSE(SmallProductShape(32, 100, 10));  // medium: Eigen's GEMM was faster
  EXPECT_FALSE(SmallProductShape(8, 20, 21));    // no compiled width that large
}

}  // namespace
}  // namespace f2obo
