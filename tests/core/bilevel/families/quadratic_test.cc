#include "core/bilevel/families/quadratic.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo {
namespace {

using testing::CheckFamilyDerivatives;
using testing::RandomMatrix;
using testing::RandomVector;

StepData RandomQuadraticStep(int d1, int d2, std::mt19937_64& rng) {
  StepData s;
  s.inner.M = RandomMatrix(d2, d1, rng);
  s.inner.c = RandomVector(d2, rng);
  s.upper.d = RandomVector(d2, rng);
  return s;
}

std::unique_ptr<BilevelFamily> MakeQuadratic(int d1, int d2, bool bump) {
  FamilyConfig c;
  c.x_dim = d1;
  c.y_dim = d2;
  c.mu = 2.5;
  c.bump_upper = bump;
  c.bump_scale = 1.7;
  return *QuadraticFamily::Create(c);
}

TEST(QuadraticFamily, BumpDerivativesMatchFiniteDifferences) {
  std::mt19937_64 rng(2);
  auto fam = MakeQuadratic(3, 4, true);
  const StepData s = RandomQuadraticStep(3, 4, rng);
  for (int trial = 0; trial < 5; ++trial) {
    const auto e =
        CheckFamilyDerivatives(*fam, s, RandomVector(3, rng), RandomVector(4, rng, 0.5), rng);
    EXPECT_LE(e.Max(), 1e-6);
  }
}

TEST(QuadraticFamily, InnerGradientVanishesAtClosedFormSolution) {
  std::mt19937_64 rng(3);
  auto fam = MakeQuadratic(4, 6, false);
  const StepData s = RandomQuadraticStep(4, 6, rng);
  const Vector x = RandomVector(4, rng);
  const Vector ystar = s.inner.M * x + s.inner.c;
  Vector gy(6);
  EXPECT_DOUBLE_EQ(fam->G(x, ystar, BatchView::All(s.inner), nullptr, &gy), 0.0);
  EXPECT_EQ(gy.norm(), 0.0);
}

TEST(QuadraticFamily, RejectsMisshapenOrNonFiniteBatches) {
  std::mt19937_64 rng(4);
  auto fam = MakeQuadratic(2, 3, false);
  StepData s = RandomQuadraticStep(2, 3, rng);
  EXPECT_TRUE(fam->ValidateBatch(s.inner, BatchRole::kInner).ok());
  EXPECT_TRUE(fam->ValidateBatch(s.upper, BatchRole::kUpper).ok());
  StepData bad = s;
  bad.inner.M.resize(2, 2);
  EXPECT_NE(fam->ValidateBatch(bad.inner, BatchRole::kInner).message().find("M is 2 x 2"),
            std::string::npos);
  bad = s;
  bad.inner.c[1] = std::nan("");
  EXPECT_NE(fam->ValidateBatch(bad.inner, BatchRole::kInner).message().find("c[1]: not finite"),
            std::string::npos);
  bad = s;
  bad.upper.d.resize(5);
  EXPECT_NE(fam->ValidateBatch(bad.upper, BatchRole::kUpper).message().find("d has 5"),
            std::string::npos);
}

// Every number within kMaxInputMagnitude, and the products of inputs the
// family forms (mu c, mu M, mu M^T c) within it too: a c of 1e300 would
// otherwise pull y to 1e300, where every later step overflows.
TEST(QuadraticFamily, RejectsNumbersAndProductsOfInputsBeyondTheInputBound) {
  std::mt19937_64 rng(5);
  auto fam = MakeQuadratic(2, 3, false);
  const StepData s = RandomQuadraticStep(2, 3, rng);
  const auto message = [&](const Batch& b, BatchRole role) {
    return std::string(fam->ValidateBatch(b, role).message());
  };
  StepData bad = s;
  bad.inner.c[0] = 1e300;
  EXPECT_NE(message(bad.inner, BatchRole::kInner).find("c[0]: 1e+300 is beyond the input bound"),
            std::string::npos);
  bad = s;
  bad.inner.M(1, 0) = -2e150;
  EXPECT_NE(message(bad.inner, BatchRole::kInner).find("M(1, 0) -2e+150 is beyond"),
            std::string::npos);
  bad = s;
  bad.upper.d[2] = std::numeric_limits<double>::infinity();
  EXPECT_NE(message(bad.upper, BatchRole::kUpper).find("d[2]: not finite"), std::string::npos);
  // Each factor within the bound, their product not.
  bad = s;
  bad.inner.M(0, 0) = 1e100;
  bad.inner.c[1] = 1e100;
  EXPECT_NE(message(bad.inner, BatchRole::kInner).find("mu * max(1, max|M|) * max(1, max|c|)"),
            std::string::npos);
  // Up to the bounds everything is accepted (mu = 2.5 here).
  StepData edge = s;
  edge.inner.M.setConstant(0.5);
  edge.inner.c[1] = kMaxInputMagnitude / 2.5;
  EXPECT_TRUE(fam->ValidateBatch(edge.inner, BatchRole::kInner).ok());
  edge.upper.d[0] = -kMaxInputMagnitude;
  EXPECT_TRUE(fam->ValidateBatch(edge.upper, BatchRole::kUpper).ok());
}

TEST(QuadraticFamily, CreateRejectsNonPositiveMu) {
  FamilyConfig c;
  c.x_dim = 1;
  c.y_dim = 1;
  c.mu = 0.0;
  const auto fam = QuadraticFamily::Create(c);
  ASSERT_FALSE(fam.ok());
  EXPECT_NE(fam.status().message().find("family.mu"), std::string::npos);
}

}  // namespace
}  // namespace f2obo
