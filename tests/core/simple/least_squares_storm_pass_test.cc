// least_squares' StormPass, IR-SCG's STORM update in one walk over the
// rows, against the family's F / G and the row-by-row walk, bit for bit.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/simple/families/simple_families.h"
#include "core/simple/simple_registries.h"
#include "tests/core/simple/simple_test_util.h"
#include "tests/core/test_streams.h"

namespace f2obo::testing {
namespace {

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof(a)) == 0; }
bool SameBits(const Vector& a, const Vector& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

// least_squares' StormPass (IR-SCG's STORM update in one walk over the
// rows): its values are F's / G's bit for bit, so is its estimate without
// prev (k = 0); with prev it is keep d + grad(x) - keep grad(prev) to
// rounding (the residuals are combined per row before the scatter), dense
// and CSR, on all rows and on a row subset.
TEST(SimpleFamilies, LeastSquaresStormPassIsTheStormUpdateInOneWalk) {
  std::mt19937_64 rng(31);
  constexpr int kD = 40;
  auto family = MakeSimpleFamily("least_squares", kD, 0);
  ASSERT_TRUE(family->HasStormPass());
  Batch dense = DenseRegression(9, kD, rng);
  for (Eigen::Index i = 0; i < dense.dense.size(); i += 3) dense.dense.data()[i] = 0.0;
  const Batch csr = AsCsr(dense);
  const int subset[] = {7, 2, 2, 5};
  for (const Batch* b : {static_cast<const Batch*>(&dense), &csr}) {
    for (const BatchView& view : {BatchView::All(*b), BatchView{b, RowSet{subset, 4}}}) {
      const Vector x = RandomVector(kD, rng), prev = RandomVector(kD, rng);
      const Vector at = RandomVector(kD, rng), before = RandomVector(kD, rng, 5.0);
      const double keep = 0.7;
      Vector gx, gp, ga;
      const double fx = family->F(x, view, &gx);
      family->F(prev, view, &gp);
      const double fa = family->G(at, view, &ga);
      StormPassIn in;
      in.role = BatchRole::kUpper;
      in.view = &view;
      in.x = &x;
      in.at = &at;
      in.keep = keep;
      Vector estimate;
      StormPassOut out = family->StormPass(in, &estimate);
      EXPECT_TRUE(SameBits(out.value_x, fx));
      EXPECT_TRUE(SameBits(out.value_at, fa));
      EXPECT_TRUE(SameBits(estimate, gx)) << "k = 0: the gradient at x";
      in.prev = &prev;
      in.before = &before;
      out = family->StormPass(in, &estimate);
      EXPECT_TRUE(SameBits(out.value_x, fx));
      EXPECT_TRUE(SameBits(out.value_at, fa));
      const Vector expected = keep * before + gx - keep * gp;
      EXPECT_LE((estimate - expected).cwiseAbs().maxCoeff(),
                1e-14 * (1.0 + expected.cwiseAbs().maxCoeff()));
      in.at = nullptr;
      Vector again;
      out = family->StormPass(in, &again);
      EXPECT_TRUE(SameBits(out.value_x, fx));
      EXPECT_TRUE(SameBits(again, estimate)) << "the decision's margins change nothing else";
    }
  }
  const Batch none = DenseRegression(0, kD, rng);
  StormPassIn in;
  const Vector x = RandomVector(kD, rng), before = RandomVector(kD, rng);
  const BatchView empty = BatchView::All(none);
  in.view = &empty;
  in.x = &x;
  in.prev = &x;
  in.before = &before;
  in.keep = 0.5;
  Vector estimate;
  const StormPassOut out = family->StormPass(in, &estimate);
  EXPECT_EQ(out.value_x, 0.0);
  EXPECT_TRUE(SameBits(estimate, Vector(0.5 * before)));
}

// Across column tiles (d = 20,000: three tiles of StormSquaredResidual's
// walk, rows reaching into each, one row empty, one view with a repeated
// row): the same bits as the row-by-row walk and as F / G.
TEST(SimpleFamilies, LeastSquaresStormPassByColumnTilesIsBitEqual) {
  std::mt19937_64 rng(32);
  constexpr int kD = 20000;
  std::uniform_int_distribution<int> col(0, kD - 1);
  std::normal_distribution<double> normal(0.0, 1.0);
  Batch b;
  b.sparse_features = true;
  std::vector<Eigen::Triplet<double>> entries;
  for (int i = 0; i < 7; ++i) {
    if (i == 3) continue;  // an empty row
    for (int k = 0; k < 300; ++k) entries.emplace_back(i, col(rng), normal(rng));
  }
  b.csr.resize(7, kD);
  b.csr.setFromTriplets(entries.begin(), entries.end());  // duplicates summed
  b.csr.makeCompressed();
  b.targets = RandomVector(7, rng);
  auto family = MakeSimpleFamily("least_squares", kD, 0);
  const int repeated[] = {5, 0, 5, 3, 6};
  for (const BatchView& view : {BatchView::All(b), BatchView{&b, RowSet{repeated, 5}}}) {
    const Vector x = RandomVector(kD, rng), prev = RandomVector(kD, rng);
    const Vector at = RandomVector(kD, rng), before = RandomVector(kD, rng);
    Vector gx;
    const double fx = family->G(x, view, &gx);
    const double fa = family->G(at, view, nullptr);
    for (bool with_prev : {false, true}) {
      StormPassIn in;
      in.view = &view;
      in.x = &x;
      in.prev = with_prev ? &prev : nullptr;
      in.at = &at;
      in.keep = 0.6;
      in.before = &before;
      Vector tiled, rows;
      const StormPassOut out = family->StormPass(in, &tiled);
      StormSquaredResidual(in, &rows, nullptr);
      EXPECT_TRUE(SameBits(out.value_x, fx));
      EXPECT_TRUE(SameBits(out.value_at, fa));
      EXPECT_TRUE(SameBits(tiled, rows)) << (with_prev ? "with prev" : "k = 0");
      if (!with_prev) {
        EXPECT_TRUE(SameBits(tiled, gx));
      }
    }
  }
}

}  // namespace
}  // namespace f2obo::testing
