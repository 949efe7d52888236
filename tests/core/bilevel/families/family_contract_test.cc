// The contract every registered bilevel family keeps, checked once over all
// of them (these checks used to be copied into each
// family's test).  What is particular to one family (its closed forms, its
// errors, its weights) stays in that family's own test.
//
// Contract: analytic derivatives match central differences (dense and CSR
// rows); a batch's dense and CSR forms give the same values and gradients;
// a view of all rows in order is the batch itself, bit for bit.  A family
// added to core/bilevel/bilevel_family_registry.cc without a case here fails
// EveryRegisteredFamilyHasACase.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/families/oracle_family.h"
#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo {
namespace {

using testing::CheckFamilyDerivatives;
using testing::RandomCsr;
using testing::RandomMatrix;
using testing::RandomVector;

// One registered family at small dimensions, with how to draw its batches
// and points.
struct FamilyCase {
  std::string name;
  FamilyConfig config;
  bool has_rows;  // sample-based: batches of dense or CSR rows
  std::function<Batch(int rows, bool sparse, std::mt19937_64&)> batch;
  std::function<StepData(bool sparse, std::mt19937_64&)> step;
  std::function<Vector(std::mt19937_64&)> x;
  std::function<Vector(std::mt19937_64&)> y;
};

// gtest prints a case by its family's name (test lists, failures).
void PrintTo(const FamilyCase& c, std::ostream* os) { *os << c.name; }

// Families exempt from the contract, with the reason and where they are
// checked instead.
const std::vector<std::string>& Exempt() {
  // oracle: values and derivatives come from the client; oracle_family_test
  // pins it to the built-in family its oracle answers with.
  static const std::vector<std::string> kExempt = {OracleFamily::kName};
  return kExempt;
}

constexpr int kD = 6;
constexpr int kC = 4;

Batch RowBatch(int rows, bool sparse, int classes, std::mt19937_64& rng) {
  Batch b;
  b.sparse_features = sparse;
  if (sparse) {
    b.csr = RandomCsr(rows, kD, 0.3, rng);
  } else {
    b.dense = RandomMatrix(rows, kD, rng);
  }
  if (classes == 0) {
    b.targets = RandomVector(rows, rng);
  } else {
    std::uniform_int_distribution<int> label(0, classes - 1);
    for (int i = 0; i < rows; ++i) b.labels.push_back(label(rng));
  }
  return b;
}

FamilyCase RowCase(const std::string& name, int classes, int y_dim,
                   std::function<Vector(std::mt19937_64&)> x) {
  FamilyCase c;
  c.name = name;
  c.config.name = name;
  c.config.features = kD;
  c.config.classes = classes;
  c.config.mu0 = 0.05;
  c.has_rows = true;
  c.batch = [classes](int rows, bool sparse, std::mt19937_64& rng) {
    return RowBatch(rows, sparse, classes, rng);
  };
  c.step = [classes](bool sparse, std::mt19937_64& rng) {
    return StepData{RowBatch(20, sparse, classes, rng), RowBatch(30, sparse, classes, rng)};
  };
  c.x = std::move(x);
  c.y = [y_dim](std::mt19937_64& rng) { return RandomVector(y_dim, rng, 0.3); };
  return c;
}

std::vector<FamilyCase> Cases() {
  std::vector<FamilyCase> cases;
  {
    // x = per-feature L2 penalties, in the family's box.
    cases.push_back(RowCase("ridge_hpo", 0, kD, [](std::mt19937_64& rng) {
      return Vector(RandomVector(kD, rng).cwiseAbs());
    }));
  }
  {
    cases.push_back(RowCase("logistic_hpo", kC, kD * kC + kC, [](std::mt19937_64& rng) {
      return Vector(RandomVector(kD, rng, 0.1).cwiseAbs());
    }));
  }
  {
    // x = (gamma, Delta): class scales in 1 +- 0.5, shifts.
    cases.push_back(RowCase("loss_tuning", kC, kD * kC + kC, [](std::mt19937_64& rng) {
      std::uniform_real_distribution<double> gamma(0.5, 1.5);
      Vector x(2 * kC);
      for (int j = 0; j < kC; ++j) x[j] = gamma(rng);
      x.tail(kC) = RandomVector(kC, rng, 0.5);
      return x;
    }));
  }
  {
    FamilyCase q;
    q.name = "quadratic";
    q.config.name = "quadratic";
    q.config.x_dim = 5;
    q.config.y_dim = 8;
    q.config.mu = 2.5;
    q.has_rows = false;
    q.step = [](bool, std::mt19937_64& rng) {
      StepData s;
      s.inner.M = RandomMatrix(8, 5, rng);
      s.inner.c = RandomVector(8, rng);
      s.upper.d = RandomVector(8, rng);
      return s;
    };
    q.x = [](std::mt19937_64& rng) { return RandomVector(5, rng); };
    q.y = [](std::mt19937_64& rng) { return RandomVector(8, rng); };
    cases.push_back(std::move(q));
  }
  return cases;
}

std::string CaseName(const ::testing::TestParamInfo<FamilyCase>& info) { return info.param.name; }

TEST(FamilyContract, EveryRegisteredFamilyHasACase) {
  std::vector<std::string> covered = Exempt();
  for (const FamilyCase& c : Cases()) covered.push_back(c.name);
  for (const std::string& name : BilevelFamilyNameList()) {
    EXPECT_NE(std::find(covered.begin(), covered.end(), name), covered.end())
        << "family '" << name << "' is registered but has no case in family_contract_test.cc";
  }
}

class FamilyContract : public ::testing::TestWithParam<FamilyCase> {
 protected:
  std::unique_ptr<BilevelFamily> Make() const {
    auto fam = CreateBilevelFamily(GetParam().config);
    EXPECT_TRUE(fam.ok()) << fam.status();
    return fam.ok() ? std::move(*fam) : nullptr;
  }
};

TEST_P(FamilyContract, DerivativesMatchFiniteDifferencesOnDenseAndCsrRows) {
  const FamilyCase& c = GetParam();
  auto fam = Make();
  ASSERT_NE(fam, nullptr);
  std::mt19937_64 rng(21);
  for (bool sparse : {false, true}) {
    if (sparse && !c.has_rows) continue;
    const StepData s = c.step(sparse, rng);
    ASSERT_TRUE(fam->ValidateBatch(s.upper, BatchRole::kUpper).ok());
    ASSERT_TRUE(fam->ValidateBatch(s.inner, BatchRole::kInner).ok());
    for (int trial = 0; trial < 5; ++trial) {
      const Vector x = c.x(rng), y = c.y(rng);
      const auto e = CheckFamilyDerivatives(*fam, s, x, y, rng);
      EXPECT_LE(e.Max(), 1e-6) << (sparse ? "csr" : "dense") << " grad_y_g " << e.grad_y_g
                               << " grad_x_g " << e.grad_x_g << " grad_x_f " << e.grad_x_f
                               << " grad_y_f " << e.grad_y_f << " hvp_yy_g " << e.hvp_yy_g
                               << " hvp_xy_g " << e.hvp_xy_g << " hvp_yy_f " << e.hvp_yy_f
                               << " pair " << e.pair;
    }
  }
}

// The sample-based families: their batches are rows.
class RowFamilyContract : public FamilyContract {};

std::vector<FamilyCase> RowCases() {
  std::vector<FamilyCase> rows;
  for (FamilyCase& c : Cases()) {
    if (c.has_rows) rows.push_back(std::move(c));
  }
  return rows;
}

TEST_P(RowFamilyContract, DenseAndCsrRowsGiveTheSameValuesAndGradients) {
  const FamilyCase& c = GetParam();
  auto fam = Make();
  ASSERT_NE(fam, nullptr);
  std::mt19937_64 rng(12);
  Batch dense = c.batch(25, false, rng);
  Batch sparse = dense;
  sparse.sparse_features = true;
  sparse.csr = dense.dense.sparseView();
  sparse.csr.makeCompressed();
  const Vector x = c.x(rng), y = c.y(rng);
  Vector gx1(x.size()), gx2(x.size()), gy1(y.size()), gy2(y.size());
  const double g1 = fam->G(x, y, BatchView::All(dense), &gx1, &gy1);
  const double g2 = fam->G(x, y, BatchView::All(sparse), &gx2, &gy2);
  EXPECT_NEAR(g1, g2, 1e-12 * std::abs(g1));
  EXPECT_LE((gx1 - gx2).norm(), 1e-12 * gx1.norm());
  EXPECT_LE((gy1 - gy2).norm(), 1e-12 * gy1.norm());
  const double f1 = fam->F(x, y, BatchView::All(dense), nullptr, &gy1);
  const double f2 = fam->F(x, y, BatchView::All(sparse), nullptr, &gy2);
  EXPECT_NEAR(f1, f2, 1e-12 * std::abs(f1));
  EXPECT_LE((gy1 - gy2).norm(), 1e-12 * gy1.norm());
}

TEST_P(RowFamilyContract, ViewOfAllRowsInOrderIsTheBatchBitForBit) {
  const FamilyCase& c = GetParam();
  auto fam = Make();
  ASSERT_NE(fam, nullptr);
  std::mt19937_64 rng(24);
  for (bool sparse : {false, true}) {
    const Batch b = c.batch(20, sparse, rng);
    std::vector<int> all(20);
    for (int i = 0; i < 20; ++i) all[i] = i;
    const BatchView view{&b, RowSet{all.data(), 20}};
    const Vector x = c.x(rng), y = c.y(rng);
    Vector gx1(x.size()), gx2(x.size()), gy1(y.size()), gy2(y.size());
    EXPECT_EQ(fam->G(x, y, view, &gx1, &gy1), fam->G(x, y, BatchView::All(b), &gx2, &gy2));
    EXPECT_EQ(gx1, gx2);
    EXPECT_EQ(gy1, gy2);
    EXPECT_EQ(fam->F(x, y, view, &gx1, &gy1), fam->F(x, y, BatchView::All(b), &gx2, &gy2));
    EXPECT_EQ(gy1, gy2);
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, FamilyContract, ::testing::ValuesIn(Cases()), CaseName);
INSTANTIATE_TEST_SUITE_P(Registered, RowFamilyContract, ::testing::ValuesIn(RowCases()), CaseName);

}  // namespace
}  // namespace f2obo
