// The multi-task families (core/multitask/multitask_family.cc): the
// tempered logistic task against finite differences and against its
// definition; temperature 1 is logistic_hpo itself; the config checks.
#include "core/multitask/multitask_family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>

#include "core/bilevel/bilevel_family_registry.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::StartsWith;

constexpr int kFeatures = 4, kClasses = 3;

StepData TaskBatches(std::mt19937_64& rng) {
  return testing::LogisticTasksStep({0}, kFeatures, kClasses, 25, rng).tasks[0].data;
}

TEST(MultitaskLogisticHpo, TemperedTasksPassTheFiniteDifferenceChecks) {
  std::unique_ptr<MultitaskFamily> f =
      *CreateMultitaskFamily(testing::LogisticTasksFamily(20, kFeatures, kClasses, 11.0));
  std::mt19937_64 rng(71);
  for (int task : {0, 3, 17}) {
    const StepData data = TaskBatches(rng);
    BilevelFamily& family = f->Task(task, data);
    const Vector x = 0.05 * (testing::RandomVector(kFeatures, rng).array().abs()).matrix();
    const Vector y = testing::RandomVector(family.y_dim(), rng, 0.5);
    const testing::FdErrors e = testing::CheckFamilyDerivatives(family, data, x, y, rng);
    EXPECT_LT(e.Max(), 1e-6) << "task " << task << " (sigma " << TaskTemperature(task, 11.0) << ")";
  }
}

// f_sigma(x, y) = CE(z(y) / sigma) and g_sigma = CE(z(y) / sigma) +
// (mu_0/2)||y||^2 + (1/2) sum_f x_f ||W_f||^2, from logistic_hpo's own f
// at y / sigma (its logits are linear in y) and its regularizer.
TEST(MultitaskLogisticHpo, TemperedTaskIsTheCrossEntropyOfTheTemperedLogits) {
  FamilyConfig plain_config;
  plain_config.name = "logistic_hpo";
  plain_config.features = kFeatures;
  plain_config.classes = kClasses;
  std::unique_ptr<BilevelFamily> plain = *CreateBilevelFamily(plain_config);
  std::unique_ptr<MultitaskFamily> f =
      *CreateMultitaskFamily(testing::LogisticTasksFamily(20, kFeatures, kClasses, 11.0));
  std::mt19937_64 rng(72);
  const int task = 5;
  const double sigma = TaskTemperature(task, 11.0);
  ASSERT_GT(sigma, 1.0);
  const StepData data = TaskBatches(rng);
  BilevelFamily& tempered = f->Task(task, data);
  const Vector x = Vector::Constant(kFeatures, 0.07);
  const Vector y = testing::RandomVector(tempered.y_dim(), rng);
  const Vector ys = y / sigma;
  const double ce_upper = plain->F(x, ys, BatchView::All(data.upper), nullptr, nullptr);
  EXPECT_NEAR(tempered.F(x, y, BatchView::All(data.upper), nullptr, nullptr), ce_upper, 1e-12);
  // logistic_hpo's g minus its regularizer at y / sigma is CE(z(y) / sigma).
  double reg_s = 0.5 * 1e-3 * ys.squaredNorm(), reg = 0.5 * 1e-3 * y.squaredNorm();
  for (int j = 0; j < kFeatures; ++j) {
    reg_s += 0.5 * x[j] * ys.segment(j * kClasses, kClasses).squaredNorm();
    reg += 0.5 * x[j] * y.segment(j * kClasses, kClasses).squaredNorm();
  }
  const double ce_inner = plain->G(x, ys, BatchView::All(data.inner), nullptr, nullptr) - reg_s;
  EXPECT_NEAR(tempered.G(x, y, BatchView::All(data.inner), nullptr, nullptr), ce_inner + reg,
              1e-12);
}

TEST(MultitaskLogisticHpo, TemperatureOneIsLogisticHpoBitForBit) {
  FamilyConfig plain_config;
  plain_config.name = "logistic_hpo";
  plain_config.features = kFeatures;
  plain_config.classes = kClasses;
  std::unique_ptr<BilevelFamily> plain = *CreateBilevelFamily(plain_config);
  std::unique_ptr<MultitaskFamily> f =
      *CreateMultitaskFamily(testing::LogisticTasksFamily(20, kFeatures, kClasses, 1.0));
  std::mt19937_64 rng(73);
  const StepData data = TaskBatches(rng);
  const Vector x = Vector::Constant(kFeatures, 0.03);
  const Vector y = testing::RandomVector(plain->y_dim(), rng);
  Vector g1(plain->y_dim()), g2(plain->y_dim());
  const double a = plain->G(x, y, BatchView::All(data.inner), nullptr, &g1);
  const double b = f->Task(9, data).G(x, y, BatchView::All(data.inner), nullptr, &g2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(g1, g2);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(TaskTemperature(i, 1.0), 1.0);
}

TEST(MultitaskFamilies, TemperaturesAreFixedPerTaskAndSpreadOverTheRange) {
  double lo = 11.0, hi = 1.0;
  for (int i = 0; i < 2000; ++i) {
    const double s = TaskTemperature(i, 11.0);
    ASSERT_GE(s, 1.0);
    ASSERT_LT(s, 11.0);
    EXPECT_EQ(s, TaskTemperature(i, 11.0));
    lo = std::min(lo, s);
    hi = std::max(hi, s);
  }
  EXPECT_LT(lo, 1.1);
  EXPECT_GT(hi, 10.9);
}

TEST(MultitaskFamilies, RefuseBadConfigsNamingTheField) {
  FamilyConfig c = testing::LogisticTasksFamily(0, kFeatures, kClasses);
  EXPECT_THAT(std::string(CreateMultitaskFamily(c).status().message()),
              StartsWith("family.tasks: m = 0"));
  c.tasks = kMaxTasks + 1;
  EXPECT_THAT(std::string(CreateMultitaskFamily(c).status().message()), StartsWith("family.tasks"));
  c = testing::LogisticTasksFamily(3, kFeatures, kClasses, 0.5);
  EXPECT_THAT(std::string(CreateMultitaskFamily(c).status().message()),
              StartsWith("family.max_temperature"));
  c.name = "multitask_nothing";
  EXPECT_THAT(std::string(CreateMultitaskFamily(c).status().message()),
              StartsWith("family.name: unknown multi-task family"));
}

}  // namespace
}  // namespace f2obo
