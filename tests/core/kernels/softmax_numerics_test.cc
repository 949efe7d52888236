// The softmax families with logits of extreme magnitude: finite logits of any
// size give the correct, finite cross-entropy (the exp never sees a positive
// argument, and the O(1) part is not lost to cancellation), while logits
// that overflow to infinity give NaN on purpose, which Session refuses with
// a clean error and the state unchanged.  Also the (d + 1) C size check,
// which overflowed int for d = INT_MAX.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/bilevel/families/logistic_hpo.h"
#include "core/bilevel/families/loss_tuning.h"
#include "core/kernels/softmax.h"
#include "core/session.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

TEST(SoftmaxNumerics, HugeTiedLogitsKeepTheirLogTwo) {
  // lse - z_l would round to 1e300 - 1e300 = 0.
  const double z[2] = {1e300, 1e300};
  EXPECT_DOUBLE_EQ(SoftmaxCrossEntropy(z, 2, 0), std::log(2.0));
  double p[2] = {1e300, 1e300};
  EXPECT_DOUBLE_EQ(SoftmaxInPlace(p, 2, 1), std::log(2.0));
  EXPECT_DOUBLE_EQ(p[0], 0.5);
  EXPECT_DOUBLE_EQ(p[1], 0.5);
}

TEST(SoftmaxNumerics, HugeOpposedLogitsGiveTheExactGap) {
  const double z[3] = {1e300, -1e300, 0.0};
  EXPECT_EQ(SoftmaxCrossEntropy(z, 3, 0), 0.0);
  EXPECT_DOUBLE_EQ(SoftmaxCrossEntropy(z, 3, 1), 2e300);
  EXPECT_DOUBLE_EQ(SoftmaxCrossEntropy(z, 3, 2), 1e300);
  double p[3] = {1e300, -1e300, 0.0};
  EXPECT_DOUBLE_EQ(SoftmaxInPlace(p, 3, 1), 2e300);
  EXPECT_EQ(p[0], 1.0);
  EXPECT_EQ(p[1], 0.0);
  EXPECT_EQ(p[2], 0.0);
}

TEST(SoftmaxNumerics, NearlyTiedHugeLogitsMatchTheShiftedComputation) {
  // Shifting every logit by a constant leaves CE unchanged; the huge copy
  // must agree with the small one to rounding of the shift itself.
  const double small[3] = {0.5, -1.25, 2.0};
  const double shift = 1e15;  // exact shifts of these values in double
  const double big[3] = {small[0] + shift, small[1] + shift, small[2] + shift};
  for (int l = 0; l < 3; ++l) {
    EXPECT_NEAR(SoftmaxCrossEntropy(big, 3, l), SoftmaxCrossEntropy(small, 3, l), 1e-12);
  }
}

TEST(SoftmaxNumerics, InfiniteLogitsGiveNaNNotAPlausibleNumber) {
  const double inf = std::numeric_limits<double>::infinity();
  const double up[2] = {inf, 1.0};
  EXPECT_TRUE(std::isnan(SoftmaxCrossEntropy(up, 2, 1)));
  const double down[2] = {-inf, -inf};
  EXPECT_TRUE(std::isnan(SoftmaxCrossEntropy(down, 2, 0)));
  double p[2] = {inf, -inf};
  EXPECT_TRUE(std::isnan(SoftmaxInPlace(p, 2, 0)));
  EXPECT_TRUE(std::isnan(p[0]) && std::isnan(p[1]));
}

// One feature, two classes: logits are W^T a + b = a * (w_0, w_1).
Batch OneFeatureBatch(double a, int label) {
  Batch b;
  b.dense = RowMatrix::Constant(1, 1, a);
  b.labels = {label};
  return b;
}

FamilyConfig TwoClassConfig(const char* name) {
  FamilyConfig c;
  c.name = name;
  c.features = 1;
  c.classes = 2;
  c.mu0 = 0.1;
  return c;
}

TEST(SoftmaxFamilies, UpperLossWithHugeFiniteLogitsIsFiniteAndCorrect) {
  for (const char* name : {"logistic_hpo", "loss_tuning"}) {
    SCOPED_TRACE(name);
    auto fam = name == std::string("logistic_hpo")
                   ? *LogisticHpoFamily::Create(TwoClassConfig(name))
                   : *LossTuningFamily::Create(TwoClassConfig(name));
    const Batch upper = OneFeatureBatch(1e150, 0);
    StepData data{upper, upper};
    fam->Prepare(data);
    const Vector x = Vector::Constant(fam->x_dim(), 0.5);
    // y = (w_0, w_1, b_0, b_1): tied logits of 1e300.
    Vector y(4);
    y << 1e150, 1e150, 0.0, 0.0;
    Vector gx(fam->x_dim()), gy(4);
    const double f = fam->F(x, y, BatchView::All(upper), &gx, &gy);
    EXPECT_DOUBLE_EQ(f, std::log(2.0));
    EXPECT_DOUBLE_EQ(fam->F(x, y, BatchView::All(upper), nullptr, nullptr), std::log(2.0));
    // grad_W = a (p - e_0) = 1e150 * (-0.5, 0.5), grad_b = (-0.5, 0.5).
    EXPECT_DOUBLE_EQ(gy[0], -0.5e150);
    EXPECT_DOUBLE_EQ(gy[1], 0.5e150);
    EXPECT_DOUBLE_EQ(gy[2], -0.5);
    EXPECT_DOUBLE_EQ(gy[3], 0.5);

    // Opposed logits +-1e300, label on the losing side: CE = 2e300.
    y << 1e150, -1e150, 0.0, 0.0;
    const Batch wrong = OneFeatureBatch(1e150, 1);
    EXPECT_DOUBLE_EQ(fam->F(x, y, BatchView::All(wrong), nullptr, &gy), 2e300);
    EXPECT_TRUE(gy.allFinite());
  }
}

TEST(SoftmaxFamilies, OverflowingLogitsGiveNaNNotAFiniteLie) {
  for (const char* name : {"logistic_hpo", "loss_tuning"}) {
    SCOPED_TRACE(name);
    auto fam = name == std::string("logistic_hpo")
                   ? *LogisticHpoFamily::Create(TwoClassConfig(name))
                   : *LossTuningFamily::Create(TwoClassConfig(name));
    const Batch b = OneFeatureBatch(1e200, 0);  // 1e200 * 1e200 = inf
    StepData data{b, b};
    fam->Prepare(data);
    const Vector x = Vector::Constant(fam->x_dim(), 0.5);
    Vector y(4);
    y << 1e200, 1.0, 0.0, 0.0;
    Vector gy(4);
    EXPECT_TRUE(std::isnan(fam->F(x, y, BatchView::All(b), nullptr, &gy)));
    EXPECT_FALSE(gy.allFinite());
    EXPECT_FALSE(std::isfinite(fam->G(x, y, BatchView::All(b), nullptr, &gy)));
    EXPECT_FALSE(gy.allFinite());
  }
}

// A session at a point with huge weights: a batch whose logits overflow is
// refused cleanly, with the state unchanged, and a sane batch still works.
TEST(SoftmaxFamilies, SessionRefusesOverflowingLogitsAndStaysUsable) {
  for (const char* name : {"logistic_hpo", "loss_tuning"}) {
    SCOPED_TRACE(name);
    const FamilyConfig fam = TwoClassConfig(name);
    SessionConfig c =
        testing::ConfigFor("f2obo", fam,
                           name == std::string("logistic_hpo") ? ConstraintSet::Box(0.0, 0.1)
                                                               : ConstraintSet::Box(0.5, 2.0));
    c.y0 = Vector::Constant(4, 1e100);
    auto s = Session::Create(c);
    ASSERT_TRUE(s.ok()) << s.status();
    const SessionState before = (*s)->state();

    // Features of 1e250 would overflow the logits (upper: f_t before the
    // round, inner: the round itself); they lie beyond the input bound
    // (core/batch.h), so both batches are refused by validation, naming
    // the feature, before anything is computed.
    StepData upper_overflow{OneFeatureBatch(1e250, 0), OneFeatureBatch(1e-200, 1)};
    auto r = (*s)->Step(upper_overflow);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr("upper batch: feature (row 0, column 0) 1e+250 is beyond the input "
                          "bound"));
    EXPECT_TRUE((*s)->state().BitEquals(before));

    StepData inner_overflow{OneFeatureBatch(1e-200, 0), OneFeatureBatch(1e250, 1)};
    r = (*s)->Step(inner_overflow);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("inner batch: feature (row 0"));
    EXPECT_TRUE((*s)->state().BitEquals(before));

    // Tiny features keep the logits finite: the session still steps (the
    // weights themselves stay 1e100, whose squares are still finite).
    StepData fine{OneFeatureBatch(1e-200, 0), OneFeatureBatch(1e-200, 1)};
    r = (*s)->Step(fine);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(std::isfinite(r->upper_loss_before));
    EXPECT_EQ((*s)->state().t, before.t + 1);
  }
}

TEST(SoftmaxFamilies, ParameterCountOverflowIsRefusedNotWrapped) {
  // (d + 1) C with d = INT_MAX overflowed int when d + 1 was formed in int.
  for (const char* name : {"logistic_hpo", "loss_tuning"}) {
    SCOPED_TRACE(name);
    FamilyConfig c = TwoClassConfig(name);
    c.features = std::numeric_limits<int>::max();
    auto make = [&] {
      return name == std::string("logistic_hpo") ? LogisticHpoFamily::Create(c)
                                                 : LossTuningFamily::Create(c);
    };
    auto f = make();
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("does not fit"));
    c.features = 1 << 30;  // (2^30 + 1) * 2 > INT_MAX
    f = make();
    ASSERT_FALSE(f.ok());
    EXPECT_THAT(std::string(f.status().message()), HasSubstr("does not fit"));
    // The largest d that fits: (d + 1) * 2 = 2^31 - 2; no d-sized allocation
    // happens at creation, so this is cheap.
    c.features = (1 << 30) - 2;
    f = make();
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)->y_dim(), 2 * ((1 << 30) - 1));
  }
}

}  // namespace
}  // namespace f2obo
