// Every algorithm in the registry, iterated by name so that a newly
// registered one is covered without editing this file: a poisoned step --
// a round whose computation overflows although every input is valid, or
// inputs beyond the input bound (core/batch.h) that would make it overflow
// -- fails with an error, leaves the serialized session state
// byte-identical, and the session then continues exactly as if the bad
// batch had never been sent.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "core/state.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr int kD1 = 3, kD2 = 4, kFeatures = 5;

// A stream whose valid steps are ordinary and whose poisoned step makes
// grad_y g infinite inside the round, whatever the current point.
struct Scenario {
  SessionConfig config;
  std::vector<StepData> valid;  // before and after the poisoned step
  StepData poisoned;
  const char* refusal;  // what the error says
};

// Quadratic: g = mu/2 ||y - M x - c||^2 with c = 1e308 would give
// grad_y g = mu (y - M x - c) ~ -2e308 = -inf.  Within the input bound
// (and the family's bound on mu |M| |c|) no quadratic batch overflows a
// round, so this one is refused by validation, before the round.
Scenario QuadraticScenario(const std::string& algorithm) {
  std::mt19937_64 rng(7);
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = kD1;
  fam.y_dim = kD2;
  fam.mu = 2.0;
  Scenario s{testing::ConfigFor(algorithm, fam, ConstraintSet::Ball(5.0)),
             {},
             {},
             "c[0]: 1e+308 is beyond the input bound"};
  const Matrix M = testing::WellConditioned(kD2, kD1, 0.7, 1.3, rng);
  for (int t = 0; t < 6; ++t) {
    s.valid.push_back(testing::QuadraticStep(M, testing::RandomVector(kD2, rng),
                                             testing::RandomVector(kD2, rng)));
  }
  s.poisoned =
      testing::QuadraticStep(M, Vector::Constant(kD2, 1e308), testing::RandomVector(kD2, rng));
  return s;
}

// Ridge (sample-based, so the mini-batch algorithms draw rows from it):
// features and targets 1e150, within the input bound, give residuals
// ~ 1e150 and grad_y g = A^T r / n ~ 1e300; the y-step then takes y to
// ~ 1e299 (with fixed step sizes), where the next residual a^T y (or grad_x g = y^2 / 2) is inf,
// for any sampled rows: the round itself overflows.
Scenario RidgeScenario(const std::string& algorithm, bool sparse) {
  std::mt19937_64 rng(8);
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = kFeatures;
  fam.mu0 = 0.1;
  Scenario s{testing::ConfigFor(algorithm, fam, ConstraintSet::Box(0.0, 1.0)),
             {},
             {},
             "session state unchanged"};
  s.config.options.sample_rows = 16;
  // Fixed steps: automatic ones (the default) shrink with
  // this batch's curvature ~ 1e300 and would not overflow.
  s.config.options.alpha = s.config.options.beta = 0.1;
  const Vector w = testing::RandomVector(kFeatures, rng);
  for (int t = 0; t < 6; ++t) {
    s.valid.push_back(StepData{testing::RegressionBatch(32, w, 0.1, sparse, rng),
                               testing::RegressionBatch(40, w, 0.5, sparse, rng)});
  }
  s.poisoned.upper = testing::RegressionBatch(32, w, 0.1, sparse, rng);
  Batch& inner = s.poisoned.inner;
  inner.targets = Vector::Constant(40, kMaxInputMagnitude);
  const RowMatrix a = RowMatrix::Constant(40, kFeatures, kMaxInputMagnitude);
  inner.sparse_features = sparse;
  if (sparse) {
    inner.csr = a.sparseView();
    inner.csr.makeCompressed();
  } else {
    inner.dense = a;
  }
  return s;
}

using Param = std::tuple<std::string, std::string>;  // algorithm, scenario

Scenario Make(const Param& p) {
  const std::string& algorithm = std::get<0>(p);
  const std::string& scenario = std::get<1>(p);
  Scenario s = scenario == "quadratic" ? QuadraticScenario(algorithm)
                                       : RidgeScenario(algorithm, scenario == "ridge_csr");
  s.config.seed = 23;
  return s;
}

class RegistryTransaction : public ::testing::TestWithParam<Param> {};

TEST_P(RegistryTransaction, AnOverflowingRoundFailsAndLeavesTheSerializedStateIdentical) {
  const std::string& algorithm = std::get<0>(GetParam());
  const Scenario s = Make(GetParam());
  auto session = Session::Create(s.config);
  ASSERT_TRUE(session.ok()) << session.status();
  // A twin that never sees the poisoned batch.
  auto twin = *Session::Create(s.config);

  // A few valid rounds first, so windows, warm starts, momentum and the RNG
  // hold something.
  for (int t = 0; t < 3; ++t) {
    ASSERT_TRUE((*session)->Step(s.valid[t]).ok()) << algorithm;
    ASSERT_TRUE(twin->Step(s.valid[t]).ok()) << algorithm;
  }
  const std::string before = (*session)->Encode((*session)->state());

  const auto bad = (*session)->Step(s.poisoned);
  ASSERT_FALSE(bad.ok()) << algorithm << ": an overflowing round was accepted";
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << bad.status();
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr(s.refusal));
  EXPECT_EQ((*session)->Encode((*session)->state()), before) << algorithm;

  // Prepare + Commit of the same batch: nothing pending to commit.
  ASSERT_FALSE((*session)->Prepare(s.poisoned).ok());
  (*session)->Commit();
  EXPECT_EQ((*session)->Encode((*session)->state()), before) << algorithm;

  // The next valid rounds work and match the twin bit for bit.
  for (int t = 3; t < 6; ++t) {
    const auto r = (*session)->Step(s.valid[t]);
    ASSERT_TRUE(r.ok()) << algorithm << ": " << r.status();
    ASSERT_TRUE(twin->Step(s.valid[t]).ok());
    EXPECT_EQ((*session)->Encode((*session)->state()), twin->Encode(twin->state()))
        << algorithm << " diverged from its twin at t = " << (*session)->state().t;
  }
  EXPECT_EQ((*session)->state().t, 7);
}

INSTANTIATE_TEST_SUITE_P(
    EveryRegisteredAlgorithm, RegistryTransaction,
    ::testing::Combine(::testing::ValuesIn(AlgorithmNames(ProblemClass::kBilevel)),
                       ::testing::Values("quadratic", "ridge_dense", "ridge_csr")),
    [](const ::testing::TestParamInfo<Param>& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param);
    });

}  // namespace
}  // namespace f2obo
