#include "core/bilevel/families/logistic_hpo.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo {
namespace {

using testing::CheckFamilyDerivatives;
using testing::RandomCsr;
using testing::RandomMatrix;
using testing::RandomVector;

constexpr int kD = 6;
constexpr int kC = 4;
constexpr int kY = kD * kC + kC;

Batch LogisticBatch(int rows, bool sparse, std::mt19937_64& rng) {
  Batch b;
  b.sparse_features = sparse;
  if (sparse) {
    b.csr = RandomCsr(rows, kD, 0.3, rng);
  } else {
    b.dense = RandomMatrix(rows, kD, rng);
  }
  std::uniform_int_distribution<int> label(0, kC - 1);
  for (int i = 0; i < rows; ++i) b.labels.push_back(label(rng));
  return b;
}

FamilyConfig LogisticConfig() {
  FamilyConfig c;
  c.features = kD;
  c.classes = kC;
  c.mu0 = 0.05;
  return c;
}

std::unique_ptr<BilevelFamily> MakeLogistic() {
  return *LogisticHpoFamily::Create(LogisticConfig());
}

bool MessageHas(const absl::Status& s, const std::string& part) {
  return s.message().find(part) != std::string::npos;
}

TEST(LogisticHpoFamily, HasTheDocumentedDimensions) {
  auto fam = MakeLogistic();
  EXPECT_EQ(fam->x_dim(), kD);
  EXPECT_EQ(fam->y_dim(), kD * kC + kC);
  EXPECT_TRUE(fam->is_classification());
}

TEST(LogisticHpoFamily, ZeroModelCostsLogCPerSampleAndOnlyRegularizerAdds) {
  std::mt19937_64 rng(22);
  auto fam = MakeLogistic();
  const Batch b = LogisticBatch(10, false, rng);
  const Vector x = Vector::Constant(kD, 0.5);
  const Vector zero = Vector::Zero(kY);
  Vector gx(kD);
  EXPECT_NEAR(fam->G(x, zero, BatchView::All(b), &gx, nullptr), std::log(kC), 1e-14);
  EXPECT_NEAR(gx.norm(), 0.0, 1e-15);
  EXPECT_NEAR(fam->F(x, zero, BatchView::All(b), nullptr, nullptr), std::log(kC), 1e-14);
  // Only the biases are non-zero: all logits shift equally, CE is unchanged,
  // and only the mu0 term (not the per-feature x_i) sees them.
  Vector bias_only = zero;
  bias_only.tail(kC).setConstant(2.0);
  EXPECT_NEAR(fam->G(x, bias_only, BatchView::All(b), &gx, nullptr),
              std::log(kC) + 0.5 * 0.05 * kC * 4.0, 1e-13);
  EXPECT_NEAR(gx.norm(), 0.0, 1e-15);
}

TEST(LogisticHpoFamily, SubsetViewEqualsABatchOfJustThoseRows) {
  std::mt19937_64 rng(25);
  auto fam = MakeLogistic();
  const Batch b = LogisticBatch(20, false, rng);
  const std::vector<int> rows = {17, 3, 8, 3, 12};
  const Batch sub = testing::SubsetOf(b, rows);
  const BatchView view{&b, RowSet{rows.data(), static_cast<int>(rows.size())}};
  const Vector x = RandomVector(kD, rng, 0.1).cwiseAbs();
  const Vector y = RandomVector(kY, rng, 0.3);
  const Vector v = RandomVector(kY, rng);
  Vector gy1(kY), gy2(kY), h1(kY), h2(kY);
  const double g1 = fam->G(x, y, view, nullptr, &gy1);
  const double g2 = fam->G(x, y, BatchView::All(sub), nullptr, &gy2);
  EXPECT_NEAR(g1, g2, 1e-13 * std::abs(g1));
  EXPECT_LE((gy1 - gy2).norm(), 1e-13 * gy1.norm());
  const double f1 = fam->F(x, y, view, nullptr, &gy1);
  const double f2 = fam->F(x, y, BatchView::All(sub), nullptr, &gy2);
  EXPECT_NEAR(f1, f2, 1e-13 * std::abs(f1));
  EXPECT_LE((gy1 - gy2).norm(), 1e-13 * gy1.norm());
  fam->HvpYYG(x, y, view, v, &h1);
  fam->HvpYYG(x, y, BatchView::All(sub), v, &h2);
  EXPECT_LE((h1 - h2).norm(), 1e-13 * h1.norm());
  EXPECT_DOUBLE_EQ(*fam->Accuracy(x, y, view), *fam->Accuracy(x, y, BatchView::All(sub)));
}

TEST(LogisticHpoFamily, AccuracyIsArgmaxOfFeatureMajorLogitsWithTiesToLowestClass) {
  FamilyConfig c = LogisticConfig();
  c.features = 2;
  c.classes = 3;
  auto fam = *LogisticHpoFamily::Create(c);
  Batch b;
  b.dense.resize(3, 2);
  b.dense << 1, 0,  // logits (0.5, 2, 0.5): class 1
      0, 1,         // logits (0.5, 0, 3.5): class 2
      0, 0;         // logits (0.5, 0, 0.5): tie between 0 and 2 -> 0
  b.labels = {1, 2, 2};
  ASSERT_TRUE(fam->ValidateBatch(b, BatchRole::kUpper).ok());
  Vector y(9);
  y << 0, 2, 0,     // W_0: feature 0's weights for classes 0..2
      0, 0, 3,      // W_1
      0.5, 0, 0.5;  // biases
  const auto acc = fam->Accuracy(Vector::Zero(2), y, BatchView::All(b));
  ASSERT_TRUE(acc.has_value());
  EXPECT_DOUBLE_EQ(*acc, 2.0 / 3.0);
  b.labels = {1, 2, 0};
  EXPECT_DOUBLE_EQ(*fam->Accuracy(Vector::Zero(2), y, BatchView::All(b)), 1.0);
}

TEST(LogisticHpoFamily, RejectsBadBatchesWithTheFieldNamed) {
  std::mt19937_64 rng(26);
  auto fam = MakeLogistic();
  Batch b = LogisticBatch(5, false, rng);
  EXPECT_TRUE(fam->ValidateBatch(b, BatchRole::kInner).ok());
  Batch bad_label = b;
  bad_label.labels[3] = 7;
  EXPECT_TRUE(
      MessageHas(fam->ValidateBatch(bad_label, BatchRole::kUpper), "label[3] = 7 outside [0, 4)"));
  Batch negative_label = b;
  negative_label.labels[0] = -1;
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(negative_label, BatchRole::kInner), "label[0] = -1"));
  Batch nan = b;
  nan.dense(2, 3) = std::nan("");
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(nan, BatchRole::kInner), "row 2, column 3"));
  Batch wide = b;
  wide.dense = RandomMatrix(5, kD + 1, rng);
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(wide, BatchRole::kUpper), "7 features"));
  Batch short_labels = b;
  short_labels.labels.pop_back();
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(short_labels, BatchRole::kUpper),
                         "upper batch: 4 labels for 5 rows"));
  Batch empty;
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(empty, BatchRole::kInner), "empty batch"));
}

TEST(LogisticHpoFamily, CreateRejectsBadConfigNamingTheField) {
  FamilyConfig c = LogisticConfig();
  c.classes = 1;
  EXPECT_TRUE(MessageHas(LogisticHpoFamily::Create(c).status(), "family.classes"));
  c = LogisticConfig();
  c.features = 0;
  EXPECT_TRUE(MessageHas(LogisticHpoFamily::Create(c).status(), "family.features"));
  c = LogisticConfig();
  c.mu0 = 0.0;
  EXPECT_TRUE(MessageHas(LogisticHpoFamily::Create(c).status(), "family.mu0"));
  c.mu0 = std::nan("");
  EXPECT_TRUE(MessageHas(LogisticHpoFamily::Create(c).status(), "family.mu0"));
}

TEST(LogisticHpoFamily, RequiresBoxKeepingGStronglyConvex) {
  auto fam = MakeLogistic();
  EXPECT_TRUE(fam->ValidateConstraint(ConstraintSet::Box(0.0, 0.1)).ok());
  EXPECT_TRUE(fam->ValidateConstraint(ConstraintSet::Box(-0.04, 0.1)).ok());
  EXPECT_FALSE(fam->ValidateConstraint(ConstraintSet::None()).ok());
  EXPECT_FALSE(fam->ValidateConstraint(ConstraintSet::Box(-0.05, 0.1)).ok());
  EXPECT_FALSE(fam->ValidateConstraint(ConstraintSet::Ball(1.0)).ok());
}

// The fused grad_y g at two points equals two separate evaluations at the
// shapes where it takes each of its paths: both models in one small
// product (the shape above), each model alone in a small product while the
// pair is past the small kernels' limit (32 x 128 x C, C = 10 and 15: the
// quality suite's digits shape), and the blocked product (C = 20).
TEST(LogisticHpoFamily, FusedGradYAtTwoPointsEqualsTwoEvaluationsAtEveryShape) {
  for (const int classes : {10, 15, 20}) {
    constexpr int kRows = 32, kFeatures = 128;
    std::mt19937_64 rng(31 + classes);
    FamilyConfig c;
    c.features = kFeatures;
    c.classes = classes;
    c.mu0 = 0.05;
    auto fam = *LogisticHpoFamily::Create(c);
    Batch b;
    b.dense = RandomMatrix(kRows, kFeatures, rng);
    std::uniform_int_distribution<int> label(0, classes - 1);
    for (int i = 0; i < kRows; ++i) b.labels.push_back(label(rng));
    const int y_dim = fam->y_dim();
    const Vector x = RandomVector(kFeatures, rng).cwiseAbs() * 0.01;
    const Vector y1 = RandomVector(y_dim, rng, 0.1), y2 = RandomVector(y_dim, rng, 0.1);
    Vector pair1(y_dim), pair2(y_dim), alone1(y_dim), alone2(y_dim);
    fam->GradYGPair(x, y1, y2, BatchView::All(b), &pair1, &pair2);
    fam->G(x, y1, BatchView::All(b), nullptr, &alone1);
    fam->G(x, y2, BatchView::All(b), nullptr, &alone2);
    EXPECT_LE((pair1 - alone1).norm(), 1e-13 * alone1.norm()) << classes << " classes";
    EXPECT_LE((pair2 - alone2).norm(), 1e-13 * alone2.norm()) << classes << " classes";
  }
}
}  // namespace
}  // namespace f2obo
