// loss_tuning's upper loss on mini-batches is an unbiased estimate of the
// full-batch loss (core/bilevel/bilevel_family.h): the mean over uniformly drawn sub-batches
// of the sub-batch value and grad_y f equals the full-batch ones.  The class
// weights u_j were once recounted over each sub-batch, which biased small
// draws on imbalanced batches towards the frequent classes; each test below
// also shows that such a recount would fail it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "core/bilevel/families/loss_tuning.h"
#include "core/rng.h"
#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo {
namespace {

using testing::RandomMatrix;
using testing::RandomVector;

constexpr int kD = 5;
constexpr int kC = 4;
constexpr int kY = kD * kC + kC;

std::unique_ptr<BilevelFamily> MakeTuning() {
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

// An imbalanced step at a random (x, y), prepared, with the full-batch f
// and grad_y f.
struct ImbalancedCase {
  explicit ImbalancedCase(uint64_t seed) : rng(seed), fam(MakeTuning()), step(ImbalancedStep(rng)) {
    fam->Prepare(step);
    x = RandomVector(2 * kC, rng, 0.5).array() + 1.0;
    y = RandomVector(kY, rng, 0.5);
    full = fam->F(x, y, BatchView::All(step.upper), nullptr, &full_grad);
  }
  // f and grad_y f on the view of `rows`; `recounted` gets f on those rows
  // as a batch of their own, where the family counts classes over just
  // them: what every view computed before the weights were the batch's.
  double Sub(const std::vector<int>& rows, Vector* grad, double* recounted) {
    const Batch own = testing::SubsetOf(step.upper, rows);
    *recounted = fam->F(x, y, BatchView::All(own), nullptr, nullptr);
    return fam->F(x, y, BatchView{&step.upper, RowSet{rows.data(), static_cast<int>(rows.size())}},
                  nullptr, grad);
  }

  std::mt19937_64 rng;
  std::unique_ptr<BilevelFamily> fam;
  StepData step;
  Vector x, y, full_grad = Vector(kY);
  double full = 0.0;
};

TEST(LossTuningMiniBatch, SingleRowDrawsAverageExactlyToTheFullBatchLossAndGradient) {
  // With one row per draw the expectation is an exact average over the rows.
  ImbalancedCase s(91);
  Vector grad(kY), mean_grad = Vector::Zero(kY);
  double mean = 0.0, old_mean = 0.0, recounted = 0.0;
  for (int i = 0; i < 60; ++i) {
    mean += s.Sub({i}, &grad, &recounted) / 60;
    mean_grad += grad / 60;
    old_mean += recounted / 60;
  }
  EXPECT_NEAR(mean, s.full, 1e-12 * s.full);
  EXPECT_LE((mean_grad - s.full_grad).norm(), 1e-12 * s.full_grad.norm());
  // A recount over the draw gives the plain mean CE: about 1/C of f here.
  EXPECT_LT(old_mean, 0.5 * s.full) << "old " << old_mean << " full " << s.full;
}

TEST(LossTuningMiniBatch, MeanOverSessionRngSubBatchesMatchesTheFullBatchLossAndGradient) {
  ImbalancedCase s(92);
  // Sub-batches of 8 rows drawn as the algorithms draw them (sf2obo.cc,
  // second_order.cc, pzobo.cc): the session Rng, without replacement.
  constexpr int kDraws = 20000, kRows = 8;
  Rng session_rng(2024);
  std::vector<int> perm(60), idx(kRows);
  Vector grad(kY), grad_mean = Vector::Zero(kY), grad_var = Vector::Zero(kY);
  double mean = 0.0, var = 0.0, old_mean = 0.0, recounted = 0.0;
  for (int r = 0; r < kDraws; ++r) {
    session_rng.SampleWithoutReplacement(60, kRows, perm.data(), idx.data());
    const double v = s.Sub(idx, &grad, &recounted);
    mean += v / kDraws;
    var += v * v / kDraws;
    grad_mean += grad / kDraws;
    grad_var += grad.cwiseAbs2() / kDraws;
    old_mean += recounted / kDraws;
  }
  var -= mean * mean;
  grad_var -= grad_mean.cwiseAbs2();
  // Statistical tolerance: 5 standard errors of the mean (the per-draw
  // standard deviation over sqrt(kDraws)); a draw this far off for a
  // correct estimator has probability below 1e-6 per coordinate, and the
  // seed is fixed.
  const double value_tol = 5.0 * std::sqrt(var / kDraws);
  EXPECT_NEAR(mean, s.full, value_tol);
  for (int k = 0; k < kY; ++k) {
    EXPECT_NEAR(grad_mean[k], s.full_grad[k], 5.0 * std::sqrt(grad_var[k] / kDraws))
        << "grad_y f[" << k << "]";
  }
  // The old per-draw recount fails that check by far: its mean is more
  // than 20 standard errors off (here about 22% below the full-batch f).
  EXPECT_GT(std::abs(old_mean - s.full), 4.0 * value_tol)
      << "old " << old_mean << " full " << s.full << " tolerance " << value_tol;
}

}  // namespace
}  // namespace f2obo
