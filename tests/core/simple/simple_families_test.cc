// The simple bilevel families: derivatives against finite differences,
// dense and CSR agreement, the means' sub-batch contract, the smoothness
// bounds, the batch checks and the registry.
#include "core/simple/families/simple_families.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/simple/simple_registries.h"
#include "tests/core/simple/simple_test_util.h"
#include "tests/core/test_streams.h"

namespace f2obo::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// One family with an upper and an inner batch of its kind (dense).
struct Case {
  std::string name;
  int features;
  int classes;
  int x_dim;
  Batch upper;
  Batch inner;
};

std::vector<Case> Cases(std::mt19937_64& rng) {
  std::vector<Case> cases;
  cases.push_back(
      {"least_squares", 9, 0, 9, DenseRegression(7, 9, rng), DenseRegression(5, 9, rng)});
  cases.push_back({"logistic", 6, 3, 18, DenseClassification(8, 6, 3, rng),
                   DenseClassification(11, 6, 3, rng)});
  cases.push_back({"linear_inverse", 8, 0, 8, Batch{}, DenseRegression(4, 8, rng)});
  return cases;
}

// Max relative error of the directional derivative of h along random unit
// directions (scale: ||grad||, as family_checks.h).
template <typename H>
double GradientError(H h, const Vector& x, std::mt19937_64& rng) {
  Vector g;
  h(x, &g);
  double worst = 0.0;
  for (int k = 0; k < 6; ++k) {
    Vector v = RandomVector(static_cast<int>(x.size()), rng);
    v.normalize();
    const double e = 1e-5;
    const double fd = (h(x + e * v, nullptr) - h(x - e * v, nullptr)) / (2 * e);
    worst = std::max(worst, std::abs(fd - v.dot(g)) / std::max(g.norm(), 1e-8));
  }
  return worst;
}

TEST(SimpleFamilies, GradientsMatchFiniteDifferencesDenseAndCsr) {
  std::mt19937_64 rng(21);
  for (Case& c : Cases(rng)) {
    auto family = MakeSimpleFamily(c.name, c.features, c.classes);
    ASSERT_NE(family, nullptr) << c.name;
    ASSERT_EQ(family->x_dim(), c.x_dim);
    for (bool csr : {false, true}) {
      Batch upper = csr && c.upper.rows() > 0 ? AsCsr(c.upper) : c.upper;
      Batch inner = csr ? AsCsr(c.inner) : c.inner;
      const BatchView up = BatchView::All(upper), in = BatchView::All(inner);
      for (int trial = 0; trial < 3; ++trial) {
        const Vector x = RandomVector(c.x_dim, rng, trial == 2 ? 3.0 : 1.0);
        auto f = [&](const Vector& p, Vector* g) { return family->F(p, up, g); };
        auto gg = [&](const Vector& p, Vector* g) { return family->G(p, in, g); };
        EXPECT_LT(GradientError(f, x, rng), 1e-7) << c.name << (csr ? " csr" : " dense");
        EXPECT_LT(GradientError(gg, x, rng), 1e-7) << c.name << (csr ? " csr" : " dense");
      }
    }
  }
}

TEST(SimpleFamilies, DenseAndCsrRowsGiveTheSameValuesAndGradients) {
  std::mt19937_64 rng(22);
  for (Case& c : Cases(rng)) {
    auto family = MakeSimpleFamily(c.name, c.features, c.classes);
    // Sparsify the rows so the CSR holds real gaps.
    for (Batch* b : {&c.upper, &c.inner}) {
      for (Eigen::Index i = 0; i < b->dense.size(); i += 3) b->dense.data()[i] = 0.0;
    }
    const Batch cu = c.upper.rows() > 0 ? AsCsr(c.upper) : c.upper, ci = AsCsr(c.inner);
    const Vector x = RandomVector(c.x_dim, rng);
    Vector g1, g2;
    const double f1 = family->F(x, BatchView::All(c.upper), &g1);
    const double f2 = family->F(x, BatchView::All(cu), &g2);
    EXPECT_NEAR(f1, f2, 1e-13 * (1.0 + std::abs(f1))) << c.name;
    EXPECT_LE((g1 - g2).norm(), 1e-13 * (1.0 + g1.norm())) << c.name;
    const double v1 = family->G(x, BatchView::All(c.inner), &g1);
    const double v2 = family->G(x, BatchView::All(ci), &g2);
    EXPECT_NEAR(v1, v2, 1e-13 * (1.0 + std::abs(v1))) << c.name;
    EXPECT_LE((g1 - g2).norm(), 1e-13 * (1.0 + g1.norm())) << c.name;
    EXPECT_NEAR(family->SmoothnessG(BatchView::All(c.inner)),
                family->SmoothnessG(BatchView::All(ci)), 1e-12);
  }
}

TEST(SimpleFamilies, ValuesAreMeansSoARowSubsetIsTheMeanOfItsRows) {
  std::mt19937_64 rng(23);
  for (Case& c : Cases(rng)) {
    auto family = MakeSimpleFamily(c.name, c.features, c.classes);
    const Vector x = RandomVector(c.x_dim, rng);
    // g on rows {3, 0} equals g on a batch of those two rows, and the mean
    // over single rows.
    const std::vector<int> idx = {3, 0};
    const BatchView sub{&c.inner, RowSet{idx.data(), 2}};
    Vector gs, g0, g3;
    const double value = family->G(x, sub, &gs);
    const Batch r0 = RowsOf(c.inner, {0}), r3 = RowsOf(c.inner, {3});
    const double v0 = family->G(x, BatchView::All(r0), &g0);
    const double v3 = family->G(x, BatchView::All(r3), &g3);
    EXPECT_NEAR(value, 0.5 * (v0 + v3), 1e-14 * (1.0 + std::abs(value))) << c.name;
    EXPECT_LE((gs - 0.5 * (g0 + g3)).norm(), 1e-14 * (1.0 + gs.norm())) << c.name;
    // An empty view: value 0, gradient 0 (sized).
    Vector ge;
    const BatchView none{&c.inner, RowSet{idx.data(), 0}};
    EXPECT_EQ(family->G(x, none, &ge), 0.0);
    ASSERT_EQ(ge.size(), c.x_dim);
    EXPECT_EQ(ge.norm(), 0.0);
  }
}

TEST(SimpleFamilies, SmoothnessBoundsHoldOnRandomPairs) {
  std::mt19937_64 rng(24);
  for (Case& c : Cases(rng)) {
    auto family = MakeSimpleFamily(c.name, c.features, c.classes);
    const BatchView up = BatchView::All(c.upper), in = BatchView::All(c.inner);
    const double lf = family->SmoothnessF(up), lg = family->SmoothnessG(in);
    EXPECT_GT(lf, 0.0) << c.name;
    EXPECT_GT(lg, 0.0) << c.name;
    double worst_f = 0.0, worst_g = 0.0;
    for (int k = 0; k < 300; ++k) {
      const double scale = k % 3 == 0 ? 0.01 : (k % 3 == 1 ? 1.0 : 10.0);
      const Vector x = RandomVector(c.x_dim, rng), y = x + RandomVector(c.x_dim, rng, scale);
      Vector gx, gy;
      family->F(x, up, &gx);
      family->F(y, up, &gy);
      worst_f = std::max(worst_f, (gx - gy).norm() / (x - y).norm());
      family->G(x, in, &gx);
      family->G(y, in, &gy);
      worst_g = std::max(worst_g, (gx - gy).norm() / (x - y).norm());
    }
    EXPECT_LE(worst_f, lf * (1.0 + 1e-12)) << c.name;
    EXPECT_LE(worst_g, lg * (1.0 + 1e-12)) << c.name;
    // Not vacuous: the observed constants are within a factor ~20 of the bounds.
    EXPECT_GT(worst_g, lg / 20.0) << c.name;
  }
}

// SmoothnessF / G are lambda_max((1/n) A^T A) by power iteration, scaled
// by at most kPowerSafety and capped at the Frobenius bound ||A||_F^2 / n.
TEST(SimpleFamilies, SmoothnessIsTheSpectralNormOfTheMeanGram) {
  Batch b;
  b.dense = (RowMatrix(2, 2) << 1.0, 2.0, 0.0, 3.0).finished();
  b.targets = Vector::Zero(2);
  // A^T A = [1 2; 2 13]: lambda_max = 7 + sqrt(40), over n = 2 rows.
  const double exact = (7.0 + std::sqrt(40.0)) / 2.0;
  auto family = MakeSimpleFamily("least_squares", 2);
  const double lg = family->SmoothnessG(BatchView::All(b));
  EXPECT_GE(lg, exact * (1.0 - 1e-12));
  EXPECT_LE(lg, exact * kPowerSafety * (1.0 + 1e-12));
  EXPECT_LT(lg, (1.0 + 4.0 + 9.0) / 2.0);  // below the Frobenius bound 7
  auto logistic = MakeSimpleFamily("logistic", 2, 2);
  b.labels = {0, 1};
  EXPECT_DOUBLE_EQ(logistic->SmoothnessF(BatchView::All(b)), 0.5 * lg);
  auto inverse = MakeSimpleFamily("linear_inverse", 2);
  EXPECT_EQ(inverse->SmoothnessF(BatchView::All(Batch{})), 1.0);
  // Rank one (the paper's B = 1^T): exact, the Frobenius bound itself.
  Batch ones;
  ones.dense = RowMatrix::Ones(3, 2);
  ones.targets = Vector::Ones(3);
  EXPECT_DOUBLE_EQ(inverse->SmoothnessG(BatchView::All(ones)), 2.0);
}

// A known spectrum: 60 x 20 rows with singular values spread over [1, 5],
// so lambda_max(A^T A / 60) = 25 / 60 while ||A||_F^2 / 60 is ~8 times that.
TEST(SimpleFamilies, PowerIterationFindsAKnownSpectralNorm) {
  std::mt19937_64 rng(29);
  Batch b;
  b.dense = WellConditioned(60, 20, 1.0, 5.0, rng);
  b.targets = Vector::Zero(60);
  const double exact = 25.0 / 60.0;
  auto family = MakeSimpleFamily("least_squares", 20);
  const double lg = family->SmoothnessG(BatchView::All(b));
  EXPECT_GE(lg, exact * (1.0 - 1e-12));
  EXPECT_LE(lg, exact * kPowerSafety * (1.0 + 1e-12));
  EXPECT_GT(b.dense.squaredNorm() / 60.0, 5.0 * lg);
}

// Rows at the input bound: the same spectrum scaled by 1e300 (entries
// times 1e150), where the iterates' squared norms overflow.  The estimate
// is the scaled one, not the first Rayleigh quotient (about half of it
// here, which made AGM-BiO's run on g diverge), on both of the iteration's
// paths (the Gram matrix for few columns, passes over the rows for many).
TEST(SimpleFamilies, PowerIterationKeepsLambdaMaxOfRowsAtTheInputBound) {
  for (const int cols : {20, 40}) {
    std::mt19937_64 rng(29);
    Batch b;
    b.dense = WellConditioned(60, cols, 1.0, 5.0, rng) * 1e150;
    b.targets = Vector::Zero(60);
    const double exact = 25.0 / 60.0 * 1e300;
    auto family = MakeSimpleFamily("least_squares", cols);
    const double lg = family->SmoothnessG(BatchView::All(b));
    EXPECT_GE(lg, exact * (1.0 - 1e-12)) << cols;
    EXPECT_LE(lg, exact * kPowerSafety * (1.0 + 1e-12)) << cols;
  }
}

TEST(SimpleFamilies, LinearInverseUpperIsHalfTheSquaredNormAndReadsNoRows) {
  auto family = MakeSimpleFamily("linear_inverse", 3);
  EXPECT_FALSE(family->upper_reads_rows());
  const Vector x = (Vector(3) << 1.0, -2.0, 2.0).finished();
  Vector g;
  const Batch empty;
  EXPECT_DOUBLE_EQ(family->F(x, BatchView::All(empty), &g), 4.5);
  EXPECT_EQ(g, x);
}

TEST(SimpleFamilies, LogisticLayoutIsFeatureMajorAndAccuracyCountsArgmax) {
  auto family = MakeSimpleFamily("logistic", 2, 3);
  ASSERT_TRUE(family->is_classification());
  // W = [[1, 0, 0], [0, 1, 0]] feature-major: logits = (a_0, a_1, 0).
  const Vector w = (Vector(6) << 1, 0, 0, 0, 1, 0).finished();
  Batch b;
  b.dense = (RowMatrix(4, 2) << 2, 1, 1, 3, -1, -2, 5, 0).finished();
  b.labels = {0, 1, 2, 1};  // argmax: 0, 1, 2, 0
  EXPECT_DOUBLE_EQ(*family->Accuracy(w, BatchView::All(b)), 0.75);
  // CE of row 0 with logits (2, 1, 0), label 0.
  const double ce0 = -2.0 + std::log(std::exp(2.0) + std::exp(1.0) + 1.0);
  const Batch row0 = RowsOf(b, {0});
  EXPECT_NEAR(family->F(w, BatchView::All(row0), nullptr), ce0, 1e-15);
  EXPECT_FALSE(MakeSimpleFamily("least_squares", 2)->Accuracy(Vector::Zero(2), BatchView::All(b)));
}

TEST(SimpleFamilies, ValidateBatchRefusesWithPreciseMessages) {
  std::mt19937_64 rng(25);
  auto ls = MakeSimpleFamily("least_squares", 4);
  Batch ok = DenseRegression(3, 4, rng);
  EXPECT_TRUE(ls->ValidateBatch(ok, BatchRole::kUpper).ok());
  EXPECT_TRUE(ls->ValidateBatch(AsCsr(ok), BatchRole::kInner).ok());
  Batch wide = DenseRegression(3, 5, rng);
  EXPECT_EQ(ls->ValidateBatch(wide, BatchRole::kUpper).message(),
            "upper batch: rows have 5 features, the session expects 4");
  Batch no_targets = ok;
  no_targets.targets.resize(0);
  EXPECT_EQ(ls->ValidateBatch(no_targets, BatchRole::kInner).message(),
            "inner batch: 0 targets for 3 rows");
  Batch nan_target = ok;
  nan_target.targets[2] = std::nan("");
  EXPECT_EQ(ls->ValidateBatch(nan_target, BatchRole::kInner).message(),
            "inner batch: target[2] is not finite");
  Batch nan_feature = ok;
  nan_feature.dense(1, 2) = std::nan("");
  EXPECT_THAT(std::string(ls->ValidateBatch(nan_feature, BatchRole::kUpper).message()),
              HasSubstr("upper batch: feature (row 1, column 2) is not finite"));
  EXPECT_EQ(ls->ValidateBatch(Batch{}, BatchRole::kUpper).message(), "upper batch: empty batch");

  auto lg = MakeSimpleFamily("logistic", 4, 3);
  Batch cls = DenseClassification(3, 4, 3, rng);
  EXPECT_TRUE(lg->ValidateBatch(cls, BatchRole::kInner).ok());
  cls.labels[1] = 3;
  EXPECT_EQ(lg->ValidateBatch(cls, BatchRole::kInner).message(),
            "inner batch: label[1] = 3 outside [0, 3)");
  cls.labels.pop_back();
  EXPECT_EQ(lg->ValidateBatch(cls, BatchRole::kUpper).message(),
            "upper batch: 2 labels for 3 rows");

  auto li = MakeSimpleFamily("linear_inverse", 4);
  EXPECT_TRUE(li->ValidateBatch(Batch{}, BatchRole::kUpper).ok());
  EXPECT_TRUE(li->ValidateBatch(ok, BatchRole::kInner).ok());
  EXPECT_THAT(std::string(li->ValidateBatch(ok, BatchRole::kUpper).message()),
              HasSubstr("upper batch: linear_inverse's f = (1/2)||x||^2 reads no rows"));
  EXPECT_EQ(li->ValidateBatch(wide, BatchRole::kInner).message(),
            "inner batch: rows have 5 features, the session expects 4");
  EXPECT_EQ(li->ValidateBatch(Batch{}, BatchRole::kInner).message(), "inner batch: empty batch");
}

// least_squares checks a step's dense batch in one read of each row
// (ValidateStepBatch): it accepts and refuses exactly what the default
// check (ValidateBatch, then each row's bound) does, with the same
// message: bad features anywhere before a row beyond the bound, the first
// bad entry named, rows beyond the bound by their first, unbounded Z.
TEST(SimpleFamilies, LeastSquaresStepBatchCheckIsTheDefaultOne) {
  std::mt19937_64 rng(17);
  const std::unique_ptr<SimpleFamily> f = MakeSimpleFamily("least_squares", 11);
  const double inf = std::numeric_limits<double>::infinity();
  std::uniform_int_distribution<int> row(0, 5), col(0, 10), kind(0, 7);
  int refused = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Batch b = DenseRegression(6, 11, rng);
    for (int edits = trial % 4; edits > 0; --edits) {
      const int i = row(rng), j = col(rng);
      switch (kind(rng)) {
        case 0:
          b.dense(i, j) = std::nan("");
          break;
        case 1:
          b.dense(i, j) = -inf;
          break;
        case 2:
          b.dense(i, j) = 2e150;
          break;  // beyond the input bound
        case 3:
          b.dense(i, j) = -1e60;
          break;  // beyond the row bound
        case 4:
          b.dense(i, j) = 1e49;
          break;  // near it
        case 5:
          b.targets[i] = std::nan("");
          break;
        case 6:
          b.targets[i] = 1e101;
          break;
        default:
          b.targets.conservativeResize(5);
          break;  // a target missing
      }
    }
    for (const double x_bound : {1.0, 1e3, inf}) {
      for (const BatchRole role : {BatchRole::kUpper, BatchRole::kInner}) {
        const absl::Status fused = f->ValidateStepBatch(b, role, x_bound);
        const absl::Status plain = f->SimpleFamily::ValidateStepBatch(b, role, x_bound);
        ASSERT_EQ(fused.code(), plain.code()) << trial << ": " << plain;
        ASSERT_EQ(fused.message(), plain.message()) << trial;
        refused += fused.ok() ? 0 : 1;
      }
    }
  }
  EXPECT_GT(refused, 400) << "the edits are refused often enough to test the errors";
  // A row beyond the bound is refused naming it (the first such row).
  Batch b = DenseRegression(4, 11, rng);
  b.dense(2, 3) = 1e60;
  b.dense(3, 0) = 1e60;
  EXPECT_THAT(std::string(f->ValidateStepBatch(b, BatchRole::kInner, 1.0).message()),
              HasSubstr("inner row 2: its gradient (or residual) in least_squares can reach"));
}

TEST(SimpleFamilyRegistry, ListsTheFamiliesAndRefusesBadConfigs) {
  EXPECT_THAT(SimpleFamilyNameList(),
              ElementsAre("least_squares", "logistic", "linear_inverse", "simple_oracle"));
  for (const std::string& name : SimpleFamilyNameList()) {
    FamilyConfig c;
    c.name = name;
    c.features = 3;
    c.classes = 2;
    c.x_dim = 3;  // simple_oracle's d
    auto f = CreateSimpleFamily(c);
    ASSERT_TRUE(f.ok()) << name;
    EXPECT_EQ((*f)->name(), name);
    EXPECT_EQ((*f)->DefaultX(), Vector::Zero((*f)->x_dim()));
  }
  FamilyConfig c;
  c.name = "ridge_hpo";
  c.features = 3;
  EXPECT_EQ(CreateSimpleFamily(c).status().message(),
            "family.name: unknown simple bilevel family 'ridge_hpo'; known: least_squares, "
            "logistic, linear_inverse, simple_oracle");
  c.name = "least_squares";
  c.features = 0;
  EXPECT_EQ(CreateSimpleFamily(c).status().message(),
            "family.features: least_squares needs d > 0, got 0");
  c.name = "linear_inverse";
  c.features = -2;
  EXPECT_EQ(CreateSimpleFamily(c).status().message(),
            "family.features: linear_inverse needs n > 0, got -2");
  c.name = "logistic";
  c.features = 3;
  c.classes = 1;
  EXPECT_EQ(CreateSimpleFamily(c).status().message(),
            "family.classes: logistic needs C >= 2, got 1");
  c.features = 1 << 20;
  c.classes = 1 << 12;
  EXPECT_EQ(CreateSimpleFamily(c).status().message(),
            "family.features: d * C does not fit the parameter vector");
  EXPECT_EQ(CreateSimpleFamily(c).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace f2obo::testing
