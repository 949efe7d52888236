// A RoundControl stops a round at an inner iteration (core/round_control.h):
// every algorithm with loops asks it, a stopped round returns the control's
// status and leaves the session exactly as it was, and the session then
// continues as if the stopped round had never been tried.
#include "core/round_control.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/session.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr int kFeatures = 5, kClasses = 3;

// Lets `allowed` checks pass, then stops every round it is asked about.
class StopAfter final : public RoundControl {
 public:
  explicit StopAfter(int allowed) : allowed_(allowed) {}
  absl::Status Check() override {
    return ++calls_ > allowed_ ? absl::CancelledError("stopped by the test") : absl::OkStatus();
  }
  int calls() const { return calls_; }

 private:
  const int allowed_;
  int calls_ = 0;
};

// Options whose size is the number of inner iterations of a round.
bool HasLoops(const AlgorithmInfo& info) {
  return info.reads.Has(Opt::inner_steps) || info.reads.Has(Opt::max_inner_iterations) ||
         info.reads.Has(Opt::linear_system_steps) || info.reads.Has(Opt::pz_directions);
}

// `algorithm` with loops of 20 iterations that no tolerance ends early,
// where it accepts them (single-loop methods insist on K = 1: their
// defaults then).  `looping` says which one it got.
SessionConfig LoopingConfig(const std::string& algorithm, bool* looping) {
  FamilyConfig fam;
  fam.name = "logistic_hpo";
  fam.features = kFeatures;
  fam.classes = kClasses;
  const SessionConfig defaults = testing::ConfigFor(algorithm, fam, ConstraintSet::Box(0.0, 0.1));
  SessionConfig c = defaults;
  c.options.inner_steps = 20;
  c.options.max_inner_iterations = 20;
  c.options.linear_system_steps = 20;
  c.options.pz_directions = 3;
  c.options.delta = c.options.delta_y = c.options.delta_z = 1e-300;
  *looping = ValidateSessionConfig(c).ok();
  return *looping ? c : defaults;
}

StepData Step(std::mt19937_64& rng) {
  return StepData{testing::ClassificationBatch(16, kFeatures, kClasses, false, rng),
                  testing::ClassificationBatch(24, kFeatures, kClasses, false, rng)};
}

class RoundControlStops : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundControlStops, AtAnInnerIterationWithItsStatusAndNothingChanged) {
  bool looping = false;
  const SessionConfig config = LoopingConfig(GetParam(), &looping);
  absl::StatusOr<std::unique_ptr<Session>> stopped = Session::Create(config);
  absl::StatusOr<std::unique_ptr<Session>> twin = Session::Create(config);
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  ASSERT_TRUE(twin.ok());
  looping = looping && HasLoops((*stopped)->problem().algorithm());
  std::mt19937_64 rng(17);
  const StepData first = Step(rng), second = Step(rng), third = Step(rng);
  ASSERT_TRUE((*stopped)->Step(first).ok());
  ASSERT_TRUE((*twin)->Step(first).ok());
  const SessionState before = (*stopped)->state();

  // Stopped at its first question, if it asks at all.
  StopAfter at_once(/*allowed=*/0);
  absl::StatusOr<StepReport> r = (*stopped)->Prepare(second, &at_once);
  if (at_once.calls() == 0) {
    EXPECT_FALSE(looping) << GetParam() << " ran 20-iteration loops without asking";
    EXPECT_TRUE(r.ok()) << r.status();
    (*stopped)->Abort();
  } else {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("stopped by the test"));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("session state unchanged"));
    EXPECT_EQ(at_once.calls(), 1);
  }
  EXPECT_TRUE((*stopped)->state().BitEquals(before));

  // Within its loops: it asks at every iteration, not once per round.
  if (looping) {
    StopAfter later(/*allowed=*/3);
    r = (*stopped)->Prepare(second, &later);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
    EXPECT_EQ(later.calls(), 4);
    EXPECT_TRUE((*stopped)->state().BitEquals(before));
  }

  // The stopped attempts left no trace: the session continues exactly like
  // one that never saw them.
  for (const StepData* d : {&second, &third}) {
    ASSERT_TRUE((*stopped)->Step(*d).ok());
    ASSERT_TRUE((*twin)->Step(*d).ok());
  }
  EXPECT_TRUE((*stopped)->state().BitEquals((*twin)->state()));
}

std::vector<std::string> BilevelNames() {
  std::vector<std::string> names;
  for (const BilevelAlgorithmEntry* e : BilevelAlgorithms()) names.emplace_back(e->info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryBilevelAlgorithm, RoundControlStops,
                         ::testing::ValuesIn(BilevelNames()));

TEST(RoundControl, NullMeansNeverStop) { EXPECT_TRUE(ContinueRound(nullptr).ok()); }

}  // namespace
}  // namespace f2obo
