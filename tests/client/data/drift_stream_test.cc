#include "client/data/drift_stream.h"

#include <gtest/gtest.h>

#include <vector>

namespace f2obo::data {
namespace {

// 10 classes, 100 rows each, feature = the row's own index (to trace rows).
Dataset Balanced() {
  Dataset d;
  d.dense.resize(1000, 2);
  d.targets.resize(1000);
  for (int i = 0; i < 1000; ++i) {
    d.dense(i, 0) = i;
    d.dense(i, 1) = 1.0;
    d.labels.push_back(i % 10);
    d.targets[i] = i % 10;
  }
  d.classes = 10;
  return d;
}

TEST(DriftingStream, SameSeedAndStepGiveTheSameBatches) {
  const Dataset d = Balanced();
  DriftOptions o;
  o.seed = 3;
  DriftingStream a(d, o), b(d, o);
  const StepData s1 = *a.Make(17), s2 = *b.Make(17);
  EXPECT_EQ(s1.upper.dense, s2.upper.dense);
  EXPECT_EQ(s1.inner.labels, s2.inner.labels);
  EXPECT_NE(a.Make(18)->upper.dense, s1.upper.dense);
}

TEST(DriftingStream, SplitsEachStepIntoUpperAndInnerRows) {
  const Dataset d = Balanced();
  DriftOptions o;
  o.rows_per_step = 100;
  o.upper_fraction = 0.3;
  const StepData s = *DriftingStream(d, o).Make(1);
  EXPECT_EQ(s.upper.rows(), 30);
  EXPECT_EQ(s.inner.rows(), 70);
  EXPECT_EQ(s.inner.labels.size(), 70u);
  for (int k = 0; k < 70; ++k) {  // labels travel with their rows
    EXPECT_EQ(s.inner.labels[k], static_cast<int>(s.inner.dense(k, 0)) % 10);
  }
}

TEST(DriftingStream, ImbalancePhasesKeepClassIWithProbabilityRhoToTheI) {
  const Dataset d = Balanced();
  DriftOptions o;
  o.rows_per_step = 1000;
  o.imbalance_rhos = {0.6, 0.9};
  o.phase_steps = 5;
  const DriftingStream stream(d, o);
  EXPECT_DOUBLE_EQ(stream.KeepProbability(5, 2), 0.36);
  EXPECT_DOUBLE_EQ(stream.KeepProbability(6, 2), 0.81);
  EXPECT_DOUBLE_EQ(stream.KeepProbability(1000, 1), 0.9);
  std::vector<double> count(10, 0.0);
  for (int t = 1; t <= 5; ++t) {
    const StepData s = *stream.Make(t);
    for (int l : s.upper.labels) ++count[l];
    for (int l : s.inner.labels) ++count[l];
  }
  // Class frequencies proportional to 0.6^i: compare class 0 to class 2.
  EXPECT_NEAR(count[2] / count[0], 0.36, 0.05);
}

TEST(DriftingStream, LabelNoiseCorruptsTrainingLabelsFromItsStepOn) {
  const Dataset d = Balanced();
  DriftOptions o;
  o.rows_per_step = 2000;
  o.label_noise = {{10, 0.5}};
  const DriftingStream stream(d, o);
  auto corrupted = [&](int64_t t, bool upper) {
    const StepData s = *stream.Make(t);
    const Batch& b = upper ? s.upper : s.inner;
    int wrong = 0;
    for (int k = 0; k < b.rows(); ++k) wrong += b.labels[k] != static_cast<int>(b.dense(k, 0)) % 10;
    return static_cast<double>(wrong) / b.rows();
  };
  EXPECT_EQ(corrupted(9, false), 0.0);
  // Replaced with prob 0.5 by a uniform class, wrong 9/10 of those: 0.45.
  EXPECT_NEAR(corrupted(10, false), 0.45, 0.05);
  EXPECT_EQ(corrupted(10, true), 0.0);  // validation stays clean by default
}

// Regression targets read as hundreds of classes: rho^i keeps almost no
// row.  The sampler gives up after a bounded number of draws and says why,
// instead of spinning.
TEST(DriftingStream, ImbalanceThatKeepsNoRowsFailsInsteadOfSpinning) {
  Dataset d;
  d.dense = RowMatrix::Ones(400, 2);
  d.targets.resize(400);
  for (int i = 0; i < 400; ++i) {
    d.labels.push_back(25 + i % 322);  // like sklearn's diabetes: 25 .. 346
    d.targets[i] = d.labels.back();
  }
  d.classes = 347;
  DriftOptions o;
  o.imbalance_rhos = {0.6, 0.7};
  const DriftingStream stream(d, o);
  const absl::StatusOr<StepData> s = stream.Make(1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.status().message().find("kept 0 of 256 rows in 256000 draws"), std::string::npos)
      << s.status();
  EXPECT_NE(s.status().message().find("rho = 0.6"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("347 classes"), std::string::npos) << s.status();
  EXPECT_FALSE(stream.MakeTasks(1, 4, 2).ok());
  // Without the imbalance, the same rows are drawn uniformly.
  o.imbalance_rhos.clear();
  EXPECT_TRUE(DriftingStream(d, o).Make(1).ok());
}

TEST(DriftingStream, ParsesScheduleFlags) {
  EXPECT_EQ(*ParseRhos("0.6,0.7"), (std::vector<double>{0.6, 0.7}));
  EXPECT_FALSE(ParseRhos("0.6,1.5").ok());
  const auto noise = ParseNoise("5000:0.1,2500:0.05");
  ASSERT_TRUE(noise.ok());
  EXPECT_EQ(noise->front().first, 2500);
  EXPECT_FALSE(ParseNoise("12").ok());
}

}  // namespace
}  // namespace f2obo::data
