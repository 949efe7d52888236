// loss_tuning's upper loss on mini-batches is an unbiased estimate of the
// full-batch loss (core/family.h): the mean over uniformly drawn sub-batches
// of the sub-batch value and grad_y f equals the full-batch ones.  The class
// weights u_j were once recounted over each sub-batch, which biased small
// draws on imbalanced batches towards the frequent classes; each test below
// also shows that such a recount would fail it.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/families/loss_tuning.h"
#include "core/rng.h"
#include "tests/core/families/family_checks.h"

namespace f2obo {
namespace {

using testing::RandomMatrix;
using testing::RandomVector;

constexpr int kD = 5;
constexpr int kC = 4;
constexpr int kY = kD * kC + kC;

std::unique_ptr<Family> MakeTuning() {
  FamilyConfig c;
  c.features = kD;
  c.classes = kC;
  c.mu0 = 0.05;
  return *LossTuningFamily::Create(c);
}

// 60 upper rows, class j kept with probability about 0.6^j (the paper's
// Sec. 6.1 imbalance): counts 28, 17, 10, 5, in shuffled order.
StepData ImbalancedStep(std::mt19937_64& rng) {
  StepData s;
  for (int j = 0; j < kC; ++j) {
    for (int k = 0; k < std::vector<int>{28, 17, 10, 5}[j]; ++k) s.upper.labels.push_back(j);
  }
  std::shuffle(s.upper.labels.begin(), s.upper.labels.end(), rng);
  s.upper.dense = RandomMatrix(60, kD, rng);
  s.inner = s.upper;
  return s;
}

// The sub-batch as its own batch: the family then counts classes over just
// these rows, which is what every view did before the weights were taken
// from the whole batch.
Batch OwnBatch(const Batch& b, const std::vector<int>& rows) {
  Batch sub;
  sub.dense = b.dense(rows, Eigen::all);
  for (int r : rows) sub.labels.push_back(b.labels[r]);
  return sub;
}

struct Moments {
  double value_mean = 0.0, value_var = 0.0;
  Vector grad_mean = Vector::Zero(kY), grad_var = Vector::Zero(kY);
};

TEST(LossTuningMiniBatch, SingleRowDrawsAverageExactlyToTheFullBatchLossAndGradient) {
  // With one row per draw the expectation is an exact average over the rows.
  std::mt19937_64 rng(91);
  auto fam = MakeTuning();
  StepData s = ImbalancedStep(rng);
  fam->Prepare(s);
  const Vector x = RandomVector(2 * kC, rng, 0.5).array() + 1.0;
  const Vector y = RandomVector(kY, rng, 0.5);
  Vector full_grad(kY), grad(kY), mean_grad = Vector::Zero(kY);
  const double full = fam->F(x, y, BatchView::All(s.upper), nullptr, &full_grad);
  double mean = 0.0, old_mean = 0.0;
  for (int i = 0; i < 60; ++i) {
    const BatchView one{&s.upper, RowSet{&i, 1}};
    mean += fam->F(x, y, one, nullptr, &grad) / 60;
    mean_grad += grad / 60;
    const Batch own = OwnBatch(s.upper, {i});
    old_mean += fam->F(x, y, BatchView::All(own), nullptr, nullptr) / 60;
  }
  EXPECT_NEAR(mean, full, 1e-12 * full);
  EXPECT_LE((mean_grad - full_grad).norm(), 1e-12 * full_grad.norm());
  // A recount over the draw gives the plain mean CE: about 1/C of f here.
  EXPECT_LT(old_mean, 0.5 * full) << "old " << old_mean << " full " << full;
}

TEST(LossTuningMiniBatch, MeanOverSessionRngSubBatchesMatchesTheFullBatchLossAndGradient) {
  std::mt19937_64 rng(92);
  auto fam = MakeTuning();
  StepData s = ImbalancedStep(rng);
  fam->Prepare(s);
  const Vector x = RandomVector(2 * kC, rng, 0.5).array() + 1.0;
  const Vector y = RandomVector(kY, rng, 0.5);
  Vector full_grad(kY), grad(kY);
  const double full = fam->F(x, y, BatchView::All(s.upper), nullptr, &full_grad);

  // Sub-batches of 8 rows drawn as the algorithms draw them (sf2obo.cc,
  // second_order.cc, pzobo.cc): the session Rng, without replacement.
  constexpr int kDraws = 20000, kRows = 8;
  Rng session_rng(2024);
  std::vector<int> perm(60), idx(kRows);
  Moments now;
  double old_mean = 0.0;
  for (int r = 0; r < kDraws; ++r) {
    session_rng.SampleWithoutReplacement(60, kRows, perm.data(), idx.data());
    const double v = fam->F(x, y, BatchView{&s.upper, RowSet{idx.data(), kRows}}, nullptr,
                            &grad);
    now.value_mean += v / kDraws;
    now.value_var += v * v / kDraws;
    now.grad_mean += grad / kDraws;
    now.grad_var += grad.cwiseAbs2() / kDraws;
    const Batch own = OwnBatch(s.upper, idx);
    old_mean += fam->F(x, y, BatchView::All(own), nullptr, nullptr) / kDraws;
  }
  now.value_var -= now.value_mean * now.value_mean;
  now.grad_var -= now.grad_mean.cwiseAbs2();
  // Statistical tolerance: 5 standard errors of the mean (the per-draw
  // standard deviation over sqrt(kDraws)); a draw this far off for a
  // correct estimator has probability below 1e-6 per coordinate, and the
  // seed is fixed.
  const double value_tol = 5.0 * std::sqrt(now.value_var / kDraws);
  EXPECT_NEAR(now.value_mean, full, value_tol);
  for (int k = 0; k < kY; ++k) {
    EXPECT_NEAR(now.grad_mean[k], full_grad[k], 5.0 * std::sqrt(now.grad_var[k] / kDraws))
        << "grad_y f[" << k << "]";
  }
  // The old per-draw recount fails that check by far: its mean is more
  // than 20 standard errors off (here about 22% below the full-batch f).
  EXPECT_GT(std::abs(old_mean - full), 4.0 * value_tol)
      << "old " << old_mean << " full " << full << " tolerance " << value_tol;
}

}  // namespace
}  // namespace f2obo
