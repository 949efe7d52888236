// SF2OBO (paper Algorithm 3): seeded sampling, reproducibility, schedules.
#include "core/bilevel/algorithms/sf2obo.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

// A drifting ridge stream: the true weights rotate slowly step by step.
std::vector<StepData> DriftingRidgeStream(int steps, int dim, bool sparse) {
  std::mt19937_64 rng(41);
  Vector w = testing::RandomVector(dim, rng);
  std::vector<StepData> stream;
  for (int t = 0; t < steps; ++t) {
    w += 0.05 * testing::RandomVector(dim, rng);
    StepData s;
    s.inner = testing::RegressionBatch(64, w, 0.5, sparse, rng);
    s.upper = testing::RegressionBatch(48, w, 0.1, sparse, rng);
    stream.push_back(std::move(s));
  }
  return stream;
}

SessionConfig RidgeSf2oboConfig(int dim, uint64_t seed) {
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = dim;
  fam.mu0 = 0.1;
  SessionConfig c = testing::ConfigFor("sf2obo", fam, ConstraintSet::Box(0.0, 1.0));
  c.seed = seed;
  c.options.gamma = 0.05;
  c.options.batch_scale = 4.0;
  return c;
}

TEST(Sf2obo, SameSeedSameStreamGivesBitIdenticalTrajectories) {
  const auto stream = DriftingRidgeStream(60, 5, false);
  auto a = *Session::Create(RidgeSf2oboConfig(5, 7));
  auto b = *Session::Create(RidgeSf2oboConfig(5, 7));
  for (const StepData& s : stream) {
    ASSERT_TRUE(a->Step(s).ok());
    ASSERT_TRUE(b->Step(s).ok());
    ASSERT_TRUE(a->state().BitEquals(b->state())) << "diverged at t = " << a->state().t;
  }
}

TEST(Sf2obo, DifferentSeedsSampleDifferentMiniBatches) {
  const auto stream = DriftingRidgeStream(10, 5, false);
  auto a = *Session::Create(RidgeSf2oboConfig(5, 7));
  auto b = *Session::Create(RidgeSf2oboConfig(5, 8));
  for (const StepData& s : stream) {
    ASSERT_TRUE(a->Step(s).ok());
    ASSERT_TRUE(b->Step(s).ok());
  }
  EXPECT_NE(BilevelView(a->state()).y, BilevelView(b->state()).y);
}

TEST(Sf2obo, SaveAndRestoreMidStreamContinuesExactly) {
  for (bool sparse : {false, true}) {
    const auto stream = DriftingRidgeStream(40, 6, sparse);
    const SessionConfig config = RidgeSf2oboConfig(6, 99);
    auto uninterrupted = *Session::Create(config);
    auto first = *Session::Create(config);
    for (int t = 0; t < 40; ++t) ASSERT_TRUE(uninterrupted->Step(stream[t]).ok());
    for (int t = 0; t < 17; ++t) ASSERT_TRUE(first->Step(stream[t]).ok());
    const std::string bytes = first->Encode(first->state());
    first.reset();
    auto restored = *Session::Restore(config, *DeserializeCheckpoint(bytes));
    for (int t = 17; t < 40; ++t) ASSERT_TRUE(restored->Step(stream[t]).ok());
    EXPECT_TRUE(restored->state().BitEquals(uninterrupted->state())) << "sparse " << sparse;
  }
}

TEST(Sf2obo, BatchSizesFollowTheScheduleCappedAtTheBatch) {
  EXPECT_EQ(ScheduledBatchSize(1.0, 2.0 / 3.0, 1, 256), 1);
  EXPECT_EQ(ScheduledBatchSize(1.0, 2.0 / 3.0, 8, 256), 4);   // 8^(2/3) = 4
  EXPECT_EQ(ScheduledBatchSize(1.0, 2.0 / 3.0, 27, 256), 9);  // 27^(2/3) = 9
  EXPECT_EQ(ScheduledBatchSize(1.0, 2.0 / 3.0, 100000, 256), 256);
  EXPECT_EQ(ScheduledBatchSize(1.0, 0.5, 10, 0), 0);  // no rows: whole batch
}

TEST(Sf2obo, TheoryInnerScheduleGrowsLogarithmically) {
  AlgorithmOptions o;
  o.inner_schedule = InnerSchedule::kTheory;
  o.tau = 1.0 / 6.0;
  o.alpha_decay = 0.0;
  o.beta_decay = 1.0 / 6.0;
  o.inner_schedule_scale = 4.0;
  // max(t^0, t^0) = 1, so K_t = ceil(4 log(t + 1)).
  EXPECT_EQ(ScheduledInnerSteps(o, 1), static_cast<int>(std::ceil(4 * std::log(2.0))));
  EXPECT_EQ(ScheduledInnerSteps(o, 100), static_cast<int>(std::ceil(4 * std::log(101.0))));
  o.max_scheduled_inner_steps = 7;
  EXPECT_EQ(ScheduledInnerSteps(o, 1000000), 7);
}

TEST(Sf2obo, ReportsTheStepSizesAndBatchSizesOfTheRound) {
  const auto stream = DriftingRidgeStream(8, 4, false);
  SessionConfig config = RidgeSf2oboConfig(4, 1);
  config.options.alpha = config.options.beta = 0.1;  // fixed (the default is automatic)
  auto s = *Session::Create(config);
  StepReport last;
  for (const StepData& d : stream) last = *s->Step(d);
  const AlgorithmOptions& o = s->config().options;
  EXPECT_EQ(last.t, 8);
  EXPECT_DOUBLE_EQ(BilevelPart(last).alpha, o.alpha);  // a = 0
  EXPECT_DOUBLE_EQ(BilevelPart(last).beta, o.beta / (o.lambda1 * std::pow(8.0, o.beta_decay)));
  EXPECT_EQ(BilevelPart(last).batch_size, 16);  // ceil(4 * 8^(2/3))
  EXPECT_EQ(BilevelPart(last).hyper_batch_size, 16);
}

}  // namespace
}  // namespace f2obo
