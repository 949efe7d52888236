// The auto step sizes' smoothness constants (BilevelFamily::EstimateSmoothness) are
// upper bounds: checked against the exact spectrum of the Hessians, built
// column by column from HVPs (finite-difference checked in each family's
// test) and solved densely by Eigen.
#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "core/bilevel/bilevel_family_registry.h"
#include "core/multitask/tempered_family.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::RandomVector;

// Largest |eigenvalue| of the symmetric matrix whose columns are hvp(e_k).
template <typename Hvp>
double SpectralNorm(int n, Hvp hvp) {
  Matrix h(n, n);
  Vector e = Vector::Zero(n), col(n);
  for (int k = 0; k < n; ++k) {
    e.setZero();
    e[k] = 1.0;
    hvp(e, &col);
    h.col(k) = col;
  }
  const Eigen::SelfAdjointEigenSolver<Matrix> eig(0.5 * (h + h.transpose()));
  return eig.eigenvalues().cwiseAbs().maxCoeff();
}

struct Exact {
  double l_g1, l_f1;
};

Exact ExactSmoothness(BilevelFamily& fam, const Vector& x, const Vector& y, const StepData& data) {
  const BatchView up = BatchView::All(data.upper), in = BatchView::All(data.inner);
  return {SpectralNorm(fam.y_dim(),
                       [&](const Vector& v, Vector* out) { fam.HvpYYG(x, y, in, v, out); }),
          SpectralNorm(fam.y_dim(),
                       [&](const Vector& v, Vector* out) { fam.HvpYYF(x, y, up, v, out); })};
}

FamilyConfig Config(const std::string& name) {
  FamilyConfig c;
  c.name = name;
  c.features = 5;
  c.classes = 3;
  c.mu0 = 0.05;
  return c;
}

StepData DataFor(const std::string& name, bool sparse, std::mt19937_64& rng) {
  if (name == "ridge_hpo") {
    const Vector w = RandomVector(5, rng);
    return {testing::RegressionBatch(9, w, 0.3, sparse, rng),
            testing::RegressionBatch(7, w, 0.3, sparse, rng)};
  }
  return {testing::ClassificationBatch(9, 5, 3, sparse, rng),
          testing::ClassificationBatch(7, 5, 3, sparse, rng)};
}

// x within what the families accept: penalties in [0, 1], loss_tuning's
// gamma of either sign and Delta anywhere.
Vector XFor(const BilevelFamily& fam, std::mt19937_64& rng) {
  Vector x = RandomVector(fam.x_dim(), rng);
  if (fam.name() != "loss_tuning") x = x.cwiseAbs().cwiseMin(1.0);
  return x;
}

class SmoothnessBound : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(SmoothnessBound, IsAtLeastTheExactConstantAtEveryPoint) {
  const auto& [name, sparse] = GetParam();
  std::mt19937_64 rng(31);
  auto fam = *CreateBilevelFamily(Config(name));
  double worst_ratio = 0.0;
  for (int trial = 0; trial < 12; ++trial) {
    const StepData data = DataFor(name, sparse, rng);
    fam->Prepare(data);
    const Vector x = XFor(*fam, rng);
    // Small and large weights: near-uniform and near-certain softmax rows.
    const Vector y = RandomVector(fam->y_dim(), rng, trial % 3 == 0 ? 0.01 : 3.0 * trial);
    const Smoothness s = fam->EstimateSmoothness(x, y, data);
    const Exact e = ExactSmoothness(*fam, x, y, data);
    EXPECT_EQ(s.source, SmoothnessSource::kBatchBound);
    EXPECT_GE(s.l_g1, e.l_g1 * (1.0 - 1e-12)) << "trial " << trial;
    EXPECT_GE(s.l_f1, e.l_f1 * (1.0 - 1e-12)) << "trial " << trial;
    worst_ratio = std::max(worst_ratio, s.l_g1 / e.l_g1);
  }
  // A bound, but not a useless one on these small batches.
  EXPECT_LT(worst_ratio, 20.0);
}

// Batches with more than kSmallGram rows and features take the trace bound.
TEST_P(SmoothnessBound, HoldsOnBatchesTooLargeForTheExactGram) {
  const auto& [name, sparse] = GetParam();
  std::mt19937_64 rng(34);
  FamilyConfig c = Config(name);
  c.features = 40;
  c.classes = 2;
  auto fam = *CreateBilevelFamily(c);
  StepData data;
  if (name == "ridge_hpo") {
    const Vector w = RandomVector(40, rng);
    data = {testing::RegressionBatch(36, w, 0.3, sparse, rng),
            testing::RegressionBatch(34, w, 0.3, sparse, rng)};
  } else {
    data = {testing::ClassificationBatch(36, 40, 2, sparse, rng),
            testing::ClassificationBatch(34, 40, 2, sparse, rng)};
  }
  fam->Prepare(data);
  const Vector x = XFor(*fam, rng);
  const Vector y = RandomVector(fam->y_dim(), rng, 0.3);
  const Smoothness s = fam->EstimateSmoothness(x, y, data);
  const Exact e = ExactSmoothness(*fam, x, y, data);
  EXPECT_GE(s.l_g1, e.l_g1 * (1.0 - 1e-12));
  EXPECT_GE(s.l_f1, e.l_f1 * (1.0 - 1e-12));
}

INSTANTIATE_TEST_SUITE_P(Families, SmoothnessBound,
                         ::testing::Combine(::testing::Values("ridge_hpo", "logistic_hpo",
                                                              "loss_tuning"),
                                            ::testing::Bool()));

TEST(SmoothnessBound, TemperedLogisticBoundsItsRescaledHessians) {
  std::mt19937_64 rng(32);
  for (const double sigma : {0.5, 1.0, 3.0}) {
    FamilyConfig c = Config("logistic_hpo");
    c.mu0 *= sigma * sigma;  // the base of a tempered task (tempered_family.h)
    TemperedFamily fam(*CreateBilevelFamily(c), sigma);
    const StepData data = DataFor("logistic_hpo", false, rng);
    const Vector x = XFor(fam, rng);
    const Vector y = RandomVector(fam.y_dim(), rng);
    const Smoothness s = fam.EstimateSmoothness(x, y, data);
    const Exact e = ExactSmoothness(fam, x, y, data);
    EXPECT_GE(s.l_g1, e.l_g1 * (1.0 - 1e-12)) << "sigma " << sigma;
    EXPECT_GE(s.l_f1, e.l_f1 * (1.0 - 1e-12)) << "sigma " << sigma;
  }
}

// At y = 0 every softmax row is uniform, where max_j p_j = 1/C is exactly
// ||diag(p) - p p^T||: with one row the bound is the exact constant.
TEST(SmoothnessBound, IsExactForOneUniformSoftmaxRow) {
  std::mt19937_64 rng(33);
  auto fam = *CreateBilevelFamily(Config("logistic_hpo"));
  StepData data{testing::ClassificationBatch(1, 5, 3, false, rng),
                testing::ClassificationBatch(1, 5, 3, false, rng)};
  const Vector x = Vector::Zero(5), y = Vector::Zero(fam->y_dim());
  const Smoothness s = fam->EstimateSmoothness(x, y, data);
  const Exact e = ExactSmoothness(*fam, x, y, data);
  EXPECT_NEAR(s.l_f1, e.l_f1, 1e-9 * e.l_f1);
  EXPECT_NEAR(s.l_g1, e.l_g1, 1e-9 * e.l_g1);
}

}  // namespace
}  // namespace f2obo
