#include "core/bilevel/families/ridge_hpo.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo {
namespace {

using testing::CheckFamilyDerivatives;
using testing::RandomCsr;
using testing::RandomMatrix;
using testing::RandomVector;

constexpr int kD = 7;

Batch RidgeBatch(int rows, bool sparse, std::mt19937_64& rng) {
  Batch b;
  b.sparse_features = sparse;
  if (sparse) {
    b.csr = RandomCsr(rows, kD, 0.3, rng);
  } else {
    b.dense = RandomMatrix(rows, kD, rng);
  }
  b.targets = RandomVector(rows, rng);
  return b;
}

std::unique_ptr<BilevelFamily> MakeRidge() {
  FamilyConfig c;
  c.features = kD;
  c.mu0 = 0.05;
  return *RidgeHpoFamily::Create(c);
}

TEST(RidgeHpoFamily, RejectsBadBatchesWithTheFieldNamed) {
  std::mt19937_64 rng(13);
  auto fam = MakeRidge();
  Batch b = RidgeBatch(5, false, rng);
  EXPECT_TRUE(fam->ValidateBatch(b, BatchRole::kInner).ok());
  Batch nan = b;
  nan.dense(2, 3) = std::nan("");
  EXPECT_NE(fam->ValidateBatch(nan, BatchRole::kInner).message().find("row 2, column 3"),
            std::string::npos);
  Batch wide = b;
  wide.dense = RandomMatrix(5, kD + 1, rng);
  EXPECT_NE(fam->ValidateBatch(wide, BatchRole::kUpper).message().find("8 features"),
            std::string::npos);
  Batch short_targets = b;
  short_targets.targets.resize(4);
  EXPECT_NE(fam->ValidateBatch(short_targets, BatchRole::kUpper).message().find("4 targets"),
            std::string::npos);
  Batch empty;
  EXPECT_NE(fam->ValidateBatch(empty, BatchRole::kUpper).message().find("empty batch"),
            std::string::npos);
}

TEST(RidgeHpoFamily, RequiresBoxKeepingGStronglyConvex) {
  auto fam = MakeRidge();
  EXPECT_TRUE(fam->ValidateConstraint(ConstraintSet::Box(0.0, 1.0)).ok());
  EXPECT_FALSE(fam->ValidateConstraint(ConstraintSet::None()).ok());
  EXPECT_FALSE(fam->ValidateConstraint(ConstraintSet::Box(-0.1, 1.0)).ok());
}

}  // namespace
}  // namespace f2obo
