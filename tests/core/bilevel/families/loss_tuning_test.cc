#include "core/bilevel/families/loss_tuning.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/bilevel/families/logistic_hpo.h"
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
constexpr double kMu0 = 0.05;

Batch TuningBatch(int rows, bool sparse, std::mt19937_64& rng) {
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

// x = (gamma, Delta) with gamma in 1 +- 0.5.
Vector RandomX(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> gamma(0.5, 1.5);
  Vector x(2 * kC);
  for (int j = 0; j < kC; ++j) x[j] = gamma(rng);
  x.tail(kC) = RandomVector(kC, rng, 0.5);
  return x;
}

FamilyConfig TuningConfig() {
  FamilyConfig c;
  c.features = kD;
  c.classes = kC;
  c.mu0 = kMu0;
  return c;
}

std::unique_ptr<BilevelFamily> MakeTuning() { return *LossTuningFamily::Create(TuningConfig()); }

bool MessageHas(const absl::Status& s, const std::string& part) {
  return s.message().find(part) != std::string::npos;
}

// Plain-logit cross-entropy of dense row i, computed from scratch.
double ReferenceCe(const Batch& b, int i, const Vector& y) {
  std::vector<double> s(kC);
  for (int c = 0; c < kC; ++c) {
    s[c] = y[kD * kC + c];
    for (int f = 0; f < kD; ++f) s[c] += b.dense(i, f) * y[f * kC + c];
  }
  double sum = 0.0;
  for (int c = 0; c < kC; ++c) sum += std::exp(s[c]);
  return std::log(sum) - s[b.labels[i]];
}

// Parameters: sparse features, client class weights on the upper batch.
class LossTuningFamilyFormat : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(LossTuningFamilyFormat, DerivativesMatchFiniteDifferences) {
  const auto [sparse, weighted] = GetParam();
  std::mt19937_64 rng(31);
  auto fam = MakeTuning();
  StepData s{TuningBatch(20, sparse, rng), TuningBatch(30, sparse, rng)};
  if (weighted) s.upper.class_weights = RandomVector(kC, rng).cwiseAbs();
  ASSERT_TRUE(fam->ValidateBatch(s.upper, BatchRole::kUpper).ok());
  ASSERT_TRUE(fam->ValidateBatch(s.inner, BatchRole::kInner).ok());
  for (int trial = 0; trial < 5; ++trial) {
    const Vector x = RandomX(rng);
    const Vector y = RandomVector(kY, rng, 0.3);
    const auto e = CheckFamilyDerivatives(*fam, s, x, y, rng);
    EXPECT_LE(e.Max(), 1e-6) << "g: " << e.grad_x_g << " " << e.grad_y_g << " " << e.hvp_yy_g << " "
                             << e.hvp_xy_g << " f: " << e.grad_y_f << " " << e.hvp_yy_f
                             << " pair: " << e.pair;
  }
}

INSTANTIATE_TEST_SUITE_P(DenseAndCsrWithAndWithoutClassWeights, LossTuningFamilyFormat,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

TEST(LossTuningFamily, HasTheDocumentedDimensionsAndAcceptsAnyConstraintSet) {
  auto fam = MakeTuning();
  EXPECT_EQ(fam->x_dim(), 2 * kC);
  EXPECT_EQ(fam->y_dim(), kD * kC + kC);
  EXPECT_TRUE(fam->is_classification());
  EXPECT_TRUE(fam->ValidateConstraint(ConstraintSet::None()).ok());
  EXPECT_TRUE(fam->ValidateConstraint(ConstraintSet::Box(-1.0, 1.0)).ok());
}

TEST(LossTuningFamily, UnitScalesAndZeroShiftsReduceGToRegularizedLogistic) {
  std::mt19937_64 rng(32);
  auto tuning = MakeTuning();
  auto logistic = *LogisticHpoFamily::Create(TuningConfig());
  const Batch b = TuningBatch(20, false, rng);
  const Vector y = RandomVector(kY, rng, 0.3);
  Vector x(2 * kC);
  x << Vector::Ones(kC), Vector::Zero(kC);
  Vector g1(kY), g2(kY);
  const double v1 = tuning->G(x, y, BatchView::All(b), nullptr, &g1);
  const double v2 = logistic->G(Vector::Zero(kD), y, BatchView::All(b), nullptr, &g2);
  EXPECT_NEAR(v1, v2, 1e-13 * std::abs(v2));
  EXPECT_LE((g1 - g2).norm(), 1e-13 * g2.norm());
  // gamma = 0 flattens the adjusted logits to Delta = 0: CE is log C.
  x.setZero();
  EXPECT_NEAR(tuning->G(x, y, BatchView::All(b), nullptr, nullptr),
              std::log(kC) + 0.5 * kMu0 * y.squaredNorm(), 1e-13);
}

TEST(LossTuningFamily, FIgnoresXAndUsesPlainLogits) {
  std::mt19937_64 rng(33);
  auto fam = MakeTuning();
  const Batch b = TuningBatch(15, false, rng);
  const Vector y = RandomVector(kY, rng, 0.3);
  Vector gx(2 * kC);
  const double f1 = fam->F(RandomX(rng), y, BatchView::All(b), &gx, nullptr);
  EXPECT_EQ(gx, Vector::Zero(2 * kC));
  EXPECT_EQ(f1, fam->F(RandomX(rng), y, BatchView::All(b), nullptr, nullptr));
}

TEST(LossTuningFamily, DefaultWeightsMakeFTheSumOfPerClassMeanCrossEntropies) {
  std::mt19937_64 rng(34);
  auto fam = MakeTuning();
  Batch b = TuningBatch(12, false, rng);
  b.labels = {0, 0, 0, 0, 0, 0, 0, 1, 1, 3, 3, 3};  // class 2 absent
  const Vector y = RandomVector(kY, rng, 0.5);
  std::vector<double> sum(kC, 0.0);
  std::vector<int> count(kC, 0);
  for (int i = 0; i < b.rows(); ++i) {
    sum[b.labels[i]] += ReferenceCe(b, i, y);
    ++count[b.labels[i]];
  }
  const double expected = sum[0] / 7 + sum[1] / 2 + sum[3] / 3;
  EXPECT_NEAR(fam->F(RandomX(rng), y, BatchView::All(b), nullptr, nullptr), expected,
              1e-12 * expected);
}

// The class weights belong to the whole batch: a view of some of its rows
// weights each class by the whole batch's u_j = m / count_j (here m = 12,
// counts 7, 2, 0, 3), not by its count in the view.
TEST(LossTuningFamily, SubsetViewsWeightClassesByTheWholeBatch) {
  std::mt19937_64 rng(35);
  auto fam = MakeTuning();
  Batch b = TuningBatch(12, false, rng);
  b.labels = {0, 0, 0, 0, 0, 0, 0, 1, 1, 3, 3, 3};
  const Vector y = RandomVector(kY, rng, 0.5);
  const std::vector<int> rows = {0, 1, 8, 11};
  const BatchView view{&b, RowSet{rows.data(), 4}};
  const double expected = (12.0 / 7 * (ReferenceCe(b, 0, y) + ReferenceCe(b, 1, y)) +
                           12.0 / 2 * ReferenceCe(b, 8, y) + 12.0 / 3 * ReferenceCe(b, 11, y)) /
                          4;
  EXPECT_NEAR(fam->F(RandomX(rng), y, view, nullptr, nullptr), expected, 1e-12 * expected);
  // The same once Prepare() has counted the batch, and a batch Prepare()
  // did not see is counted on its own (not mistaken for the prepared one).
  StepData step{b, b};
  fam->Prepare(step);
  const BatchView prepared_view{&step.upper, RowSet{rows.data(), 4}};
  EXPECT_NEAR(fam->F(RandomX(rng), y, prepared_view, nullptr, nullptr), expected, 1e-12 * expected);
  Batch other = b;
  other.labels = {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 3};  // counts 3, 8, 0, 1
  const BatchView other_view{&other, RowSet{rows.data(), 4}};
  const double other_expected =
      (12.0 / 3 * (ReferenceCe(other, 0, y) + ReferenceCe(other, 1, y)) +
       12.0 / 8 * ReferenceCe(other, 8, y) + 12.0 / 1 * ReferenceCe(other, 11, y)) /
      4;
  EXPECT_NEAR(fam->F(RandomX(rng), y, other_view, nullptr, nullptr), other_expected,
              1e-12 * other_expected);
}

TEST(LossTuningFamily, ClientClassWeightsOverrideInverseFrequency) {
  std::mt19937_64 rng(36);
  auto fam = MakeTuning();
  Batch b = TuningBatch(10, false, rng);
  b.class_weights.resize(kC);
  b.class_weights << 0.5, 2.0, 0.0, 1.5;
  ASSERT_TRUE(fam->ValidateBatch(b, BatchRole::kUpper).ok());
  const Vector y = RandomVector(kY, rng, 0.5);
  double expected = 0.0;
  for (int i = 0; i < b.rows(); ++i) {
    expected += b.class_weights[b.labels[i]] * ReferenceCe(b, i, y) / b.rows();
  }
  EXPECT_NEAR(fam->F(RandomX(rng), y, BatchView::All(b), nullptr, nullptr), expected,
              1e-12 * expected);
}

TEST(LossTuningFamily, SubsetViewEqualsABatchOfJustThoseRowsCarryingTheWholeBatchsWeights) {
  std::mt19937_64 rng(39);
  auto fam = MakeTuning();
  const Batch b = TuningBatch(20, false, rng);
  const std::vector<int> rows = {4, 19, 0, 7, 7, 13};
  Batch sub = testing::SubsetOf(b, rows);
  const BatchView view{&b, RowSet{rows.data(), static_cast<int>(rows.size())}};
  const Vector x = RandomX(rng), y = RandomVector(kY, rng, 0.3), v = RandomVector(kY, rng);
  Vector gx1(2 * kC), gx2(2 * kC), gy1(kY), gy2(kY), h1(kY), h2(kY);
  const double g1 = fam->G(x, y, view, &gx1, &gy1);
  const double g2 = fam->G(x, y, BatchView::All(sub), &gx2, &gy2);
  EXPECT_NEAR(g1, g2, 1e-13 * std::abs(g1));
  EXPECT_LE((gx1 - gx2).norm(), 1e-13 * gx1.norm());
  EXPECT_LE((gy1 - gy2).norm(), 1e-13 * gy1.norm());
  // f's class weights are those of the whole batch b: the sub-batch equals
  // a batch of those rows that carries them as its class_weights.
  std::vector<int> count(kC, 0);
  for (int l : b.labels) ++count[l];
  sub.class_weights.resize(kC);
  for (int j = 0; j < kC; ++j) sub.class_weights[j] = count[j] > 0 ? 20.0 / count[j] : 0.0;
  const double f1 = fam->F(x, y, view, nullptr, &gy1);
  const double f2 = fam->F(x, y, BatchView::All(sub), nullptr, &gy2);
  EXPECT_NEAR(f1, f2, 1e-13 * std::abs(f1));
  EXPECT_LE((gy1 - gy2).norm(), 1e-13 * gy1.norm());
  fam->HvpYYF(x, y, view, v, &h1);
  fam->HvpYYF(x, y, BatchView::All(sub), v, &h2);
  EXPECT_LE((h1 - h2).norm(), 1e-13 * h1.norm());
}

TEST(LossTuningFamily, AccuracyUsesPlainLogitsNotTheAdjustedOnes) {
  FamilyConfig c = TuningConfig();
  c.features = 2;
  c.classes = 3;
  auto fam = *LossTuningFamily::Create(c);
  Batch b;
  b.dense.resize(3, 2);
  b.dense << 1, 0, 0, 1, 0, 0;  // plain logits (0.5, 2, 0.5), (0.5, 0, 3.5),
  b.labels = {1, 2, 2};         // (0.5, 0, 0.5): predictions 1, 2, 0 (tie)
  Vector y(9);
  y << 0, 2, 0, 0, 0, 3, 0.5, 0, 0.5;  // W_0, W_1, biases
  // Delta would make every adjusted prediction class 0.
  Vector x(6);
  x << 1, 1, 1, 100, 0, 0;
  EXPECT_DOUBLE_EQ(*fam->Accuracy(x, y, BatchView::All(b)), 2.0 / 3.0);
}

TEST(LossTuningFamily, RejectsBadBatchesWithTheFieldNamed) {
  std::mt19937_64 rng(40);
  auto fam = MakeTuning();
  Batch b = TuningBatch(5, false, rng);
  EXPECT_TRUE(fam->ValidateBatch(b, BatchRole::kInner).ok());
  Batch bad_label = b;
  bad_label.labels[3] = 7;
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(bad_label, BatchRole::kInner),
                         "inner batch: label[3] = 7 outside [0, 4)"));
  Batch nan = b;
  nan.dense(1, 4) = std::nan("");
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(nan, BatchRole::kUpper), "row 1, column 4"));
  Batch wide = b;
  wide.dense = RandomMatrix(5, kD + 1, rng);
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(wide, BatchRole::kUpper), "7 features"));
  Batch short_weights = b;
  short_weights.class_weights = Vector::Ones(kC - 1);
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(short_weights, BatchRole::kUpper),
                         "upper batch: class_weights has 3 entries, expected classes = 4"));
  Batch negative_weight = b;
  negative_weight.class_weights = Vector::Ones(kC);
  negative_weight.class_weights[2] = -1.0;
  EXPECT_TRUE(
      MessageHas(fam->ValidateBatch(negative_weight, BatchRole::kUpper), "class_weights[2]"));
  Batch nan_weight = b;
  nan_weight.class_weights = Vector::Ones(kC);
  nan_weight.class_weights[0] = std::nan("");
  EXPECT_TRUE(MessageHas(fam->ValidateBatch(nan_weight, BatchRole::kUpper), "class_weights[0]"));
}

TEST(LossTuningFamily, CreateRejectsBadConfigNamingTheField) {
  FamilyConfig c = TuningConfig();
  c.classes = 1;
  EXPECT_TRUE(MessageHas(LossTuningFamily::Create(c).status(), "family.classes"));
  c = TuningConfig();
  c.features = -3;
  EXPECT_TRUE(MessageHas(LossTuningFamily::Create(c).status(), "family.features"));
  c = TuningConfig();
  c.mu0 = -1.0;
  EXPECT_TRUE(MessageHas(LossTuningFamily::Create(c).status(), "family.mu0"));
  c.mu0 = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(MessageHas(LossTuningFamily::Create(c).status(), "family.mu0"));
}

}  // namespace
}  // namespace f2obo
