// core/kernels/small_gemm.h: the small-shape products against the order
// they document (every entry a sequential sum from 0, over features for
// A W, over rows for A^T R), bit for bit, and against Eigen's product to
// rounding; every compiled-in column count and a run-time one, contiguous
// and strided (a block of a wider matrix, as the logits pair's halves).
#include "core/kernels/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "core/kernels/blocked_gemm.h"
#include "core/kernels/softmax.h"
#include "core/kernels/softmax_rows.h"

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

TEST(SoftmaxRows, ExpNonPositiveIsWithinTwoUlpsOfLibm) {
  std::mt19937_64 rng(29);
  std::uniform_real_distribution<double> u(-708.0, 0.0), small(-1.0, 0.0);
  for (int k = 0; k < 200000; ++k) {
    const double x = k % 2 == 0 ? u(rng) : small(rng);
    const double e = std::exp(x);
    EXPECT_LE(std::abs(ExpNonPositive(x) - e), 2.0 * std::numeric_limits<double>::epsilon() * e)
        << x;
  }
  EXPECT_EQ(ExpNonPositive(0.0), 1.0);
  EXPECT_EQ(ExpNonPositive(-0.0), 1.0);
  EXPECT_EQ(ExpNonPositive(-709.0), 0.0);  // below DBL_MIN: flushed
  EXPECT_EQ(ExpNonPositive(-std::numeric_limits<double>::infinity()), 0.0);
  EXPECT_TRUE(std::isnan(ExpNonPositive(std::numeric_limits<double>::quiet_NaN())));
}

TEST(SoftmaxRows, MatchesSoftmaxInPlaceRowByRowIncludingNonFiniteRows) {
  std::mt19937_64 rng(30);
  std::normal_distribution<double> n01;
  constexpr int kN = 9, kC = 3;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  RowMatrix z = RowMatrix::NullaryExpr(kN, kC, [&] { return 5.0 * n01(rng); });
  z(1, 2) = 1e300;  // huge logits keep their digits (max subtracted first)
  z(1, 0) = 1e300;
  z(2, 0) = kInf;   // a non-finite maximum: NaN row
  z(3, 1) = -kInf;  // a -inf logit: probability 0
  z(4, 2) = std::numeric_limits<double>::quiet_NaN();
  const int labels[kN] = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  RowMatrix rows = z;
  double ce[kN], scratch[kN];
  SoftmaxRowsInPlace(
      rows.data(), kN, kC, kC, [&](int i) { return labels[i]; }, ce, scratch);
  for (int i = 0; i < kN; ++i) {
    double ref[kC] = {z(i, 0), z(i, 1), z(i, 2)};
    const double ref_ce = SoftmaxInPlace(ref, kC, labels[i]);
    if (std::isnan(ref_ce)) {
      EXPECT_TRUE(std::isnan(ce[i])) << i;
      for (int j = 0; j < kC; ++j) EXPECT_TRUE(std::isnan(rows(i, j))) << i;
      continue;
    }
    EXPECT_NEAR(ce[i], ref_ce, 4e-16 * (1.0 + std::abs(ref_ce))) << i;
    for (int j = 0; j < kC; ++j) EXPECT_NEAR(rows(i, j), ref[j], 4e-16) << i << "," << j;
  }
  EXPECT_EQ(rows(3, 1), 0.0);
  EXPECT_TRUE(std::isnan(rows(2, 1)));
  EXPECT_TRUE(std::isnan(rows(4, 0)));
}

}  // namespace
}  // namespace f2obo
