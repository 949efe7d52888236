// core/kernels/small_gemm.h: the small-shape products against the order
// they document (every entry a sequential sum from 0, over features for
// A W, over rows for A^T R), bit for bit, and against Eigen's product to
// rounding; every compiled-in column count and a run-time one, contiguous
// and strided (a block of a wider matrix, as the logits pair's halves).
#include "core/kernels/small_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/kernels/blocked_gemm.h"
#include "core/kernels/softmax.h"
#include "core/kernels/softmax_residuals.h"
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

// The vectorized variants: products from A's transpose across
// rows, one or two models at once; the gradient products with the bias row
// and the ridge epilogue.  Each bit for bit against the documented order.
TEST(SmallGemm, TransposedAndPairedProductsKeepTheDocumentedOrder) {
  std::mt19937_64 rng(31);
  // c = 10 and 20: class groups of 8 + 2 and 8 + 8 + 4 in the transposing
  // stores (AVX-512 builds).
  for (int c : {2, 3, 5, 7, 10, 20}) {
    for (int n : {1, 3, 8, 9, 17}) {
      for (int d : {1, 4, 5, 20, 33}) {
        const RowMatrix a = Random(n, d, rng), at = a.transpose();
        const RowMatrix w1 = Random(d, c, rng), w2 = Random(d, c, rng);
        // Z_1 and Z_2 side by side in one n x 2c block.
        RowMatrix pair(n, 2 * c);
        const double* ws[2] = {w1.data(), w2.data()};
        double* zs[2] = {pair.data(), pair.data() + c};
        SmallProductsFromTranspose<2>(at.data(), n, d, ws, c, zs, 2 * c);
        EXPECT_TRUE(pair.leftCols(c) == OrderedProduct(a, w1)) << n << " " << d << " " << c;
        EXPECT_TRUE(pair.rightCols(c) == OrderedProduct(a, w2)) << n << " " << d << " " << c;
        RowMatrix z(n, c);
        double* z1[1] = {z.data()};
        SmallProductsFromTranspose<1>(at.data(), n, d, ws, c, z1, c);
        EXPECT_TRUE(z == OrderedProduct(a, w1));
        // With the biases (the c entries after W, as in a model y = (W, b)):
        // the sum, then one add.
        const RowMatrix yb = Random(d + 1, c, rng);
        const double* wb[1] = {yb.data()};
        SmallProductsFromTranspose<1>(at.data(), n, d, wb, c, z1, c, /*bias=*/true);
        RowMatrix want = OrderedProduct(a, yb.topRows(d));
        want.rowwise() += yb.row(d);
        EXPECT_TRUE(z == want) << n << " " << d << " " << c;

        // Gradients of two residual blocks (the pair's halves), with and
        // without the ridge epilogue, against A^T R, the sequential column
        // sums from row 0, then g += mu0 w, g += x_f w.
        const RowMatrix r = Random(n, 2 * c, rng);
        const RowMatrix y1 = Random(d + 1, c, rng), y2 = Random(d + 1, c, rng);
        const Vector x = Vector::NullaryExpr(d, [&] { return std::abs(Random(1, 1, rng)(0)); });
        const double mu0 = 1e-3;
        for (bool ridge : {false, true}) {
          RowMatrix g1(d + 1, c), g2(d + 1, c);
          const double* rs[2] = {r.data(), r.data() + c};
          double* gs[2] = {g1.data(), g2.data()};
          small_gemm::RidgeEpilogue epi;
          epi.mu0 = mu0;
          epi.x = x.data();
          epi.w[0] = y1.data();
          epi.w[1] = y2.data();
          SmallGradientProducts<2>(a.data(), d, n, d, rs, 2 * c, c, gs, ridge ? &epi : nullptr);
          for (int m = 0; m < 2; ++m) {
            const RowMatrix rm = r.middleCols(m * c, c);
            const RowMatrix& ym = m == 0 ? y1 : y2;
            RowMatrix want(d + 1, c);
            want.topRows(d) = OrderedProduct(at, rm);
            for (int j = 0; j < c; ++j) {
              double s = rm(0, j);
              for (int i = 1; i < n; ++i) s += rm(i, j);
              want(d, j) = s;
            }
            if (ridge) {
              for (int f = 0; f <= d; ++f) {
                for (int j = 0; j < c; ++j) {
                  want(f, j) = small_gemm::MulAdd(mu0, ym(f, j), want(f, j));
                  if (f < d) want(f, j) = small_gemm::MulAdd(x[f], ym(f, j), want(f, j));
                }
              }
            }
            EXPECT_TRUE((m == 0 ? g1 : g2) == want)
                << "n=" << n << " d=" << d << " c=" << c << " m=" << m << " ridge=" << ridge;
          }
        }
      }
    }
  }
}

TEST(SmallGemm, TheSmallShapesAreTheBenchmarksSmallAndMediumRoundsNotThePapers) {
  EXPECT_TRUE(SmallProductShape(8, 20, 6));       // d = 20, C = 3 pair, 8 rows
  EXPECT_TRUE(SmallProductShape(32, 100, 20));    // medium pair: the loops beat Eigen's GEMM
  EXPECT_FALSE(SmallProductShape(256, 784, 10));  // the paper's shape keeps the blocked GEMM
  EXPECT_FALSE(SmallProductShape(8, 20, 21));     // no compiled width that large
}

TEST(SmallGemm, TheMediumShapeKeepsTheDocumentedOrder) {
  std::mt19937_64 rng(32);
  const int n = 32, d = 100, c = 10;
  const RowMatrix a = Random(n, d, rng), at = a.transpose(), w = Random(d, c, rng);
  RowMatrix z(n, c);
  const double* ws[1] = {w.data()};
  double* zs[1] = {z.data()};
  SmallProductsFromTranspose<1>(at.data(), n, d, ws, c, zs, c);
  EXPECT_TRUE(z == OrderedProduct(a, w));
  EXPECT_LE((z - a * w).cwiseAbs().maxCoeff(), 1e-13 * (1.0 + a.cwiseAbs().maxCoeff() * d));
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

// The fused kernel (softmax_residuals.h) against the unfused passes it
// replaces, bit for bit: the logits from A^T with their biases, the block
// softmax, (p - e_l) / n, and the rows' cross-entropies; tails of rows and
// non-finite rows included.
bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(SoftmaxResiduals, BitEqualToTheUnfusedPasses) {
#ifndef F2OBO_SOFTMAX_RESIDUALS
  GTEST_SKIP() << "the fused kernel is compiled for AVX-512 only";
#endif
  std::mt19937_64 rng(33);
  for (int c : {2, 3, 5, 10, 20}) {
    for (int n : {1, 5, 8, 13, 32}) {
      for (int d : {1, 7, 20}) {
        RowMatrix a = Random(n, d, rng);
        // A row with an infinite feature: non-finite logits, a NaN row.
        if (n > 2) a(1, 0) = std::numeric_limits<double>::infinity();
        const RowMatrix at = a.transpose();
        const RowMatrix y1 = 3.0 * Random(d + 1, c, rng), y2 = 3.0 * Random(d + 1, c, rng);
        std::vector<int> labels(n);
        for (int i = 0; i < n; ++i) labels[i] = static_cast<int>(rng() % c);
        auto label = [&](int i) { return labels[i]; };
        const double inv_n = 1.0 / n;
        // The fused pair into an n x 2c block, with model 0's cross-entropies.
        RowMatrix fused = RowMatrix::Constant(n, 2 * c, -7.0);
        std::vector<double> ce(n, -7.0);
        const double* ws[2] = {y1.data(), y2.data()};
        double* rs[2] = {fused.data(), fused.data() + c};
        ASSERT_TRUE(
            SmallSoftmaxResiduals<2>(at.data(), n, d, ws, c, label, inv_n, rs, 2 * c, ce.data()));
        for (int m = 0; m < 2; ++m) {
          RowMatrix ref(n, c);
          double* zs[1] = {ref.data()};
          const double* wm[1] = {ws[m]};
          SmallProductsFromTranspose<1>(at.data(), n, d, wm, c, zs, c, /*bias=*/true);
          std::vector<double> want_ce(n), scratch(n);
          SoftmaxRowsInPlace(ref.data(), n, c, c, label, want_ce.data(), scratch.data());
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < c; ++j) {
              ref(i, j) = (ref(i, j) - (j == labels[i] ? 1.0 : 0.0)) * inv_n;
            }
          }
          for (int i = 0; i < n; ++i) {
            for (int j = 0; j < c; ++j) {
              EXPECT_TRUE(SameBits(fused(i, m * c + j), ref(i, j)))
                  << "c=" << c << " n=" << n << " d=" << d << " m=" << m << " i=" << i << ": "
                  << fused(i, m * c + j) << " vs " << ref(i, j);
            }
            if (m == 0) {
              EXPECT_TRUE(SameBits(ce[i], want_ce[i]))
                  << "c=" << c << " n=" << n << " i=" << i << ": " << ce[i] << " vs " << want_ce[i];
            }
          }
          if (n > 2) {
            EXPECT_TRUE(std::isnan(fused(1, m * c)));
          }
        }
      }
    }
  }
}

TEST(SoftmaxResiduals, VectorExpIsBitEqualToExpNonPositive) {
#ifndef F2OBO_SOFTMAX_RESIDUALS
  GTEST_SKIP() << "the fused kernel is compiled for AVX-512 only";
#else
  std::mt19937_64 rng(34);
  std::uniform_real_distribution<double> u(-720.0, 0.0), small(-1.0, 0.0);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {
      0.0,     -0.0,  -708.0, -708.0000001, -709.0, -kInf, std::numeric_limits<double>::quiet_NaN(),
      -1e-300, -745.2};
  for (int k = 0; k < 100000; ++k) x.push_back(k % 2 == 0 ? u(rng) : small(rng));
  while (x.size() % 8 != 0) x.push_back(-1.0);
  for (size_t i = 0; i < x.size(); i += 8) {
    alignas(64) double out[8];
    _mm512_store_pd(out, small_gemm::ExpNonPositive8(_mm512_loadu_pd(x.data() + i)));
    for (int q = 0; q < 8; ++q) {
      EXPECT_TRUE(SameBits(out[q], ExpNonPositive(x[i + q]))) << x[i + q];
    }
  }
#endif
}

}  // namespace
}  // namespace f2obo
