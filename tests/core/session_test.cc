// Session::Step is transactional: bad input or a diverging round returns a
// precise error and leaves the state bit-for-bit unchanged.
#include "core/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/bilevel_state.h"
#include "core/bilevel/hypergradients/upper_step.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr int kFeatures = 6, kClasses = 3;

std::unique_ptr<Session> LogisticSession(const std::string& algorithm) {
  FamilyConfig fam;
  fam.name = "logistic_hpo";
  fam.features = kFeatures;
  fam.classes = kClasses;
  return *Session::Create(testing::ConfigFor(algorithm, fam, ConstraintSet::Box(0.0, 0.1)));
}

StepData LogisticStep(std::mt19937_64& rng, bool sparse = false) {
  return StepData{testing::ClassificationBatch(20, kFeatures, kClasses, sparse, rng),
                  testing::ClassificationBatch(30, kFeatures, kClasses, sparse, rng)};
}

// Applies `bad` and checks the error mentions `needle` and nothing changed.
void ExpectRejectedUnchanged(Session& s, const StepData& bad, const std::string& needle) {
  const SessionState before = s.state();
  const auto r = s.Step(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  EXPECT_TRUE(s.state().BitEquals(before));
}

class SessionRejects : public ::testing::TestWithParam<std::string> {};

TEST_P(SessionRejects, BadBatchesWithAPreciseErrorAndUnchangedState) {
  std::mt19937_64 rng(51);
  auto s = LogisticSession(GetParam());
  ASSERT_TRUE(s->Step(LogisticStep(rng)).ok());  // a non-trivial state first

  StepData nan = LogisticStep(rng);
  nan.inner.dense(4, 2) = std::nan("");
  ExpectRejectedUnchanged(*s, nan, "inner batch: feature (row 4, column 2) is not finite");

  StepData wide = LogisticStep(rng);
  wide.upper.dense = testing::RandomMatrix(30, kFeatures + 2, rng);
  ExpectRejectedUnchanged(*s, wide, "upper batch: rows have 8 features");

  StepData label = LogisticStep(rng);
  label.inner.labels[3] = kClasses;
  ExpectRejectedUnchanged(*s, label, "label[3] = 3 outside [0, 3)");

  StepData empty = LogisticStep(rng);
  empty.upper = Batch();
  ExpectRejectedUnchanged(*s, empty, "upper batch: empty batch");

  StepData csr = LogisticStep(rng, /*sparse=*/true);
  csr.inner.csr.valuePtr()[0] = std::numeric_limits<double>::infinity();
  ExpectRejectedUnchanged(*s, csr, "inner batch: csr.values[0]: not finite");

  StepData missing = LogisticStep(rng);
  missing.upper.labels.pop_back();
  ExpectRejectedUnchanged(*s, missing, "19 labels for 20 rows");

  // And the session still steps normally afterwards.
  EXPECT_TRUE(s->Step(LogisticStep(rng)).ok());
  EXPECT_EQ(s->state().t, 3);
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, SessionRejects,
                         ::testing::Values("f2obo", "f2obo_sl", "af2obo", "sf2obo"));

TEST(Session, DivergingRoundFailsAndLeavesStateUnchanged) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 2;
  SessionConfig config = testing::ConfigFor("f2obo", fam, ConstraintSet::None());
  config.options.alpha = 1e150;  // z leaves the safe magnitude within the inner loop
  auto s = *Session::Create(config);
  const SessionState before = s->state();
  const auto r =
      s->Step(testing::QuadraticStep(Matrix::Identity(2, 2), Vector::Ones(2), Vector::Zero(2)));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("non-finite"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("state unchanged"));
  EXPECT_TRUE(s->state().BitEquals(before));
}

TEST(Session, MalformedCsrIsRejectedBeforeItBecomesABatch) {
  const struct {
    std::vector<int64_t> indptr;
    std::vector<int32_t> indices;
    std::vector<double> values;
    const char* needle;
  } cases[] = {
      {{0, 1}, {0}, {1.0}, "indptr: has 2 entries, expected rows + 1 = 3"},
      {{0, 2, 1}, {0, 1}, {1.0, 1.0}, "must start at 0 and end at nnz"},
      {{0, 2, 2}, {1, 0}, {1.0, 1.0}, "not strictly increasing"},
      {{0, 1, 2}, {0, 9}, {1.0, 1.0}, "column 9 outside [0, 4)"},
      {{0, 1, 2}, {0, 1}, {1.0, std::nan("")}, "csr.values[1]: not finite"},
      {{0, 1, 2}, {0, 1}, {1.0}, "2 indices but 1 values"},
      {{0, 2, 1, 2}, {0, 1}, {1.0, 1.0}, "indptr: decreases at row 1"},
  };
  for (const auto& c : cases) {
    const int rows = static_cast<int>(c.indptr.size()) - 1;
    const auto m = MakeCsr(rows == 3 ? 3 : 2, 4, c.indptr, c.indices, c.values);
    ASSERT_FALSE(m.ok()) << c.needle;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.needle));
  }
  const auto ok = MakeCsr(2, 4, {0, 1, 3}, {2, 0, 3}, {1.0, 2.0, 3.0});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->coeff(0, 2), 1.0);
  EXPECT_EQ(ok->coeff(1, 3), 3.0);
}

TEST(Session, CreateValidatesTheInitialPointAndConstraint) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  SessionConfig c = testing::ConfigFor("f2obo", fam, ConstraintSet::Box(0.0, 1.0));
  c.x0 = Vector::Constant(2, 2.0);
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("initial.x: outside the constraint set"));
  c.x0 = Vector::Constant(3, 0.5);
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("initial.x: has 3 entries, expected 2"));
  c.x0 = Vector();
  c.y0 = Vector::Ones(2);
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("initial.y: has 2 entries, expected 3"));
  c.y0 = Vector();
  c.constraint = ConstraintSet::Box(1.0, 0.0);
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("constraint.box: lo > hi"));
  c.constraint = ConstraintSet::Box(0.5, 1.0);
  const auto s = Session::Create(c);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->state().x, Vector::Constant(2, 0.5));  // projection of 0
  c.family.name = "nope";
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("family.name: unknown family 'nope'"));
  c.family.name = "quadratic";
  c.algorithm = "sgd";
  EXPECT_THAT(std::string(Session::Create(c).status().message()),
              HasSubstr("algorithm: unknown algorithm 'sgd'"));
}

TEST(Session, PrequentialLossIsMeasuredBeforeTheRoundLearns) {
  std::mt19937_64 rng(52);
  auto s = LogisticSession("f2obo");
  const StepData step = LogisticStep(rng);
  const Vector x = s->state().x, y = BilevelView(s->state()).y;
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(s->config().family);
  family->Prepare(step);
  const double expected = family->F(x, y, BatchView::All(step.upper), nullptr, nullptr);
  const auto r = s->Step(step);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->upper_loss_before, expected);  // y = 0: log C per row
  EXPECT_NEAR(r->upper_loss_before, std::log(3.0), 1e-12);
  ASSERT_TRUE(r->accuracy_before.has_value());
}

// A restored state may carry any t >= 1 and any counters (ImportSession):
// the step after INT64_MAX is refused rather than overflowing t, and the
// counters saturate instead of overflowing.
TEST(Session, CountersAtTheirMaximumSaturateAndTheLastStepIsRefused) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::mt19937_64 rng(53);
  const SessionConfig config = testing::ConfigFor(
      "f2obo",
      [] {
        FamilyConfig f;
        f.name = "logistic_hpo";
        f.features = kFeatures;
        f.classes = kClasses;
        return f;
      }(),
      ConstraintSet::Box(0.0, 0.1));
  auto fresh = *Session::Create(config);
  ASSERT_TRUE(fresh->Step(LogisticStep(rng)).ok());

  Checkpoint near = *DeserializeCheckpoint(fresh->Encode(fresh->state()));
  near.state.t = kMaxStepIndex - 1;  // the largest index a state may carry, minus one
  near.state.inner_iterations = kMax - 1;
  near.state.rows_processed = kMax - 1;
  auto s = *Session::Restore(config, near);
  const auto r = s->Step(LogisticStep(rng));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(BilevelPart(*r).z_iterations + BilevelPart(*r).y_iterations, 1);
  EXPECT_GT(r->rows_processed, 1);
  EXPECT_EQ(s->state().t, kMaxStepIndex);
  EXPECT_EQ(s->state().inner_iterations, kMax);
  EXPECT_EQ(s->state().rows_processed, kMax);

  const SessionState last = s->state();
  const auto refused = s->Step(LogisticStep(rng));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("step counter is at its maximum; session state unchanged"));
  EXPECT_TRUE(s->state().BitEquals(last));

  // The running counts saturate too (drift_steps is a double sum: past
  // 2^53 it stops counting instead of wrapping).
  RunningMetrics running;
  running.evaluated_steps = kMax;
  running.sums = {0.0, 0.0, 0.0, 9007199254740992.0};
  ExactMetrics m;
  m.variation = 1.0;
  m.drift = 1.0;
  Accumulate(m, &running);
  EXPECT_EQ(running.evaluated_steps, kMax);
  EXPECT_EQ(running.sums[kDriftSteps], 9007199254740992.0);
}

// A stored or imported state's step counts are whole numbers no larger than
// the evaluated steps (the wire carries them as integers: the fuzzer found
// an import with unconverged_steps = -1e270, which no int64 holds).
TEST(Session, RestoreRefusesRunningCountsThatAreNotStepCounts) {
  std::mt19937_64 rng(59);
  const SessionConfig config = LogisticSession("f2obo")->config();
  auto fresh = *Session::Create(config);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(fresh->Step(LogisticStep(rng)).ok());
  Checkpoint good = *DeserializeCheckpoint(fresh->Encode(fresh->state()));
  good.metrics.evaluated_steps = 2;
  good.metrics.sums.assign(kBilevelSumCount, 0.0);
  good.metrics.sums[kDriftSteps] = 2.0;
  ASSERT_TRUE(Session::Restore(config, good).ok());

  const struct {
    int sum;
    double value;
    const char* needle;
  } kBad[] = {{kUnconvergedSteps, -1.05659e270, "state.metrics.unconverged_steps"},
              {kUnconvergedDriftSteps, 0.5, "state.metrics.unconverged_drift_steps"},
              {kDriftSteps, 3.0, "state.metrics.drift_steps: 3 is not a step count"}};
  for (const auto& bad : kBad) {
    Checkpoint c = good;
    c.metrics.sums[bad.sum] = bad.value;
    const auto r = Session::Restore(config, c);
    ASSERT_FALSE(r.ok()) << bad.needle;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(bad.needle));
  }
  Checkpoint ahead = good;
  ahead.metrics.evaluated_steps = ahead.state.t;  // more evaluated steps than applied
  const auto r = Session::Restore(config, ahead);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("evaluated steps at step"));
}

// A state written with the automatic upper step (gamma = 0; its bettors'
// part [L | W | x_1 | S | C] is the state's last aux part, core/bilevel/
// hypergradients/upper_step.h) continues under an explicit gamma, as a fork or an import
// that sets gamma asks: the accumulator is dropped, never read as one of the
// algorithm's parts.  The other way, an explicit-gamma state continued with
// the automatic step starts the accumulator fresh from the restored x.
TEST(Session, AStateOfEitherUpperStepModeContinuesInTheOther) {
  for (const std::string algorithm : {"f2obo", "sf2obo", "af2obo"}) {
    SCOPED_TRACE(algorithm);
    std::mt19937_64 rng(61);
    SessionConfig automatic = LogisticSession(algorithm)->config();
    automatic.options.gamma = 0.0;
    SessionConfig fixed = automatic;
    fixed.options.gamma = 0.01;

    auto a = *Session::Create(automatic);
    auto e = *Session::Create(fixed);
    for (int i = 0; i < 3; ++i) {
      const StepData step = LogisticStep(rng);
      ASSERT_TRUE(a->Step(step).ok());
      ASSERT_TRUE(e->Step(step).ok());
    }
    ASSERT_EQ(a->state().aux.size(), e->state().aux.size() + 1);

    // Automatic -> explicit: equal to the same state without the part.
    const Checkpoint from_auto = *DeserializeCheckpoint(a->Encode(a->state()));
    absl::StatusOr<std::unique_ptr<Session>> continued = Session::Restore(fixed, from_auto);
    ASSERT_TRUE(continued.ok()) << continued.status();
    Checkpoint without_part = from_auto;
    without_part.state.aux.pop_back();
    auto reference = *Session::Restore(fixed, without_part);
    EXPECT_TRUE((*continued)->state().BitEquals(reference->state()));
    const StepData next = LogisticStep(rng);
    ASSERT_TRUE((*continued)->Step(next).ok());
    ASSERT_TRUE(reference->Step(next).ok());
    EXPECT_TRUE((*continued)->state().BitEquals(reference->state()));

    // Explicit -> automatic: the accumulator starts from the restored x
    // (x_1 = x; at restore, or at the first round for an algorithm without
    // parts of its own) with gradient bounds >= 0 and wealth > 0.
    const Checkpoint from_fixed = *DeserializeCheckpoint(e->Encode(e->state()));
    absl::StatusOr<std::unique_ptr<Session>> upgraded = Session::Restore(automatic, from_fixed);
    ASSERT_TRUE(upgraded.ok()) << upgraded.status();
    const Vector restored_x = (*upgraded)->state().x;
    ASSERT_TRUE((*upgraded)->Step(next).ok());
    const SessionState& u = (*upgraded)->state();
    ASSERT_EQ(u.aux.size(), from_fixed.state.aux.size() + 1);
    const Vector& part = u.aux[u.aux.size() - 1];
    const int d = static_cast<int>(u.x.size());
    ASSERT_EQ(part.size(), kUpperStepParts * d);  // [L | W | x_1 | S | C]
    EXPECT_TRUE((part.head(d).array() >= 0.0).all());
    EXPECT_TRUE((part.segment(d, d).array() > 0.0).all());
    EXPECT_EQ(part.segment(2 * d, d), restored_x);
    EXPECT_NE(u.x, restored_x);  // the step moved x
  }
}

}  // namespace
}  // namespace f2obo
