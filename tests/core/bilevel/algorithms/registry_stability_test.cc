// No algorithm diverges by construction.  Every registered
// algorithm, at its registry defaults and (where the entry has one) at the
// paper's experimental setting, runs 2,000 steps of a drifting stream
// without a single refused (non-finite or out-of-range) round, and ends with
// a finite, in-range state.  Iterates the registry, so a new algorithm or a
// new experimental setting is covered without editing this file.
//
// Two streams: a quadratic whose M_t, c_t, d_t rotate and drift (g has
// strong convexity 1), and a 3-class logistic_hpo stream whose class means
// move every 400 steps (g has the family's ridge mu_0 = 0.05).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/problem_registry.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

constexpr int kSteps = 2000;

struct Stream {
  FamilyConfig family;
  ConstraintSet constraint;
  std::vector<StepData> steps;
};

Stream DriftingQuadratic() {
  constexpr int kD1 = 3, kD2 = 4;
  std::mt19937_64 rng(2025);
  Stream s;
  s.family.name = "quadratic";
  s.family.x_dim = kD1;
  s.family.y_dim = kD2;
  s.family.mu = 1.0;
  s.constraint = ConstraintSet::Ball(3.0);
  const Matrix m0 = testing::WellConditioned(kD2, kD1, 0.5, 1.5, rng);
  const Vector c0 = testing::RandomVector(kD2, rng), d0 = testing::RandomVector(kD2, rng);
  for (int t = 1; t <= kSteps; ++t) {
    const double phase = 2.0 * M_PI * t / 500.0;  // one full turn every 500 steps
    const Matrix m = std::cos(phase) * m0 + 0.3 * std::sin(phase) * Matrix::Ones(kD2, kD1);
    s.steps.push_back(testing::QuadraticStep(m, c0 * std::cos(phase),
                                             d0 + 0.5 * testing::RandomVector(kD2, rng)));
  }
  return s;
}

Stream DriftingLogistic() {
  constexpr int kFeatures = 5, kClasses = 3, kRows = 16;
  std::mt19937_64 rng(2026);
  Stream s;
  s.family.name = "logistic_hpo";
  s.family.features = kFeatures;
  s.family.classes = kClasses;
  s.family.mu0 = 0.05;
  s.constraint = ConstraintSet::Box(0.0, 0.1);
  for (int t = 1; t <= kSteps; ++t) {
    StepData d;
    d.upper = testing::ClassificationBatch(kRows, kFeatures, kClasses, false, rng);
    d.inner = testing::ClassificationBatch(kRows, kFeatures, kClasses, false, rng);
    // The phase shifts every feature: the distribution drifts in steps.
    const double shift = static_cast<double>((t - 1) / 400);
    d.upper.dense.array() += shift;
    d.inner.dense.array() += shift;
    s.steps.push_back(std::move(d));
  }
  return s;
}

const Stream& GetStream(const std::string& name) {
  static const Stream* quadratic = new Stream(DriftingQuadratic());
  static const Stream* logistic = new Stream(DriftingLogistic());
  return name == "quadratic" ? *quadratic : *logistic;
}

using Case = std::tuple<std::string /*algorithm*/, std::string /*stream*/, bool /*experiment*/>;

class RegistryStability : public ::testing::TestWithParam<Case> {};

TEST_P(RegistryStability, TwoThousandDriftingStepsWithoutARefusedRound) {
  const auto& [algorithm, stream_name, experiment] = GetParam();
  const AlgorithmInfo& info = *FindAlgorithm(algorithm);
  const Stream& stream = GetStream(stream_name);
  SessionConfig config = testing::ConfigFor(algorithm, stream.family, stream.constraint);
  if (experiment) info.experiment(&config.options);
  config.seed = 7;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  ASSERT_TRUE(session.ok()) << session.status();
  for (int t = 0; t < kSteps; ++t) {
    const absl::StatusOr<StepReport> r = (*session)->Step(stream.steps[t]);
    ASSERT_TRUE(r.ok()) << algorithm << (experiment ? " (paper setting)" : " (defaults)") << " on "
                        << stream_name << ": " << r.status();
  }
  const Session& s = **session;
  EXPECT_EQ(s.state().t, kSteps + 1);
  EXPECT_EQ(s.state().FirstOutOfRange(s.problem().layout(), kMaxStateMagnitude), "");
  EXPECT_TRUE(config.constraint.Contains(s.state().x, 1e-9));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& a : AlgorithmNames(ProblemClass::kBilevel)) {
    for (const char* stream : {"quadratic", "logistic"}) {
      cases.emplace_back(a, stream, false);
      // The paper's setting, for the algorithms whose entry has one.
      if (FindAlgorithm(a)->experiment != nullptr) cases.emplace_back(a, stream, true);
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Registry, RegistryStability, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return std::get<0>(p.param) + "_" + std::get<1>(p.param) +
                                  (std::get<2>(p.param) ? "_paper" : "_defaults");
                         });

}  // namespace
}  // namespace f2obo
