// The simple bilevel class through Session, for every algorithm of the
// class: transactional rounds, determinism, checkpoints that resume
// bit-identically, refusals that change nothing, and the class's metrics.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "core/simple/row_window.h"
#include "core/simple/simple_metrics_evaluator.h"
#include "core/simple/simple_registries.h"
#include "core/simple/simple_state.h"
#include "tests/core/simple/simple_test_util.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr int kFeatures = 12;

SessionConfig LeastSquaresConfig(const std::string& algorithm) {
  SessionConfig c;
  c.problem_class = ProblemClass::kSimpleBilevel;
  c.family.name = "least_squares";
  c.family.features = kFeatures;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  c.constraint = ConstraintSet::L1Ball(2.0);
  c.seed = 7;
  return c;
}

Batch Rows(std::mt19937_64& rng, int rows, int cols) {
  std::normal_distribution<double> n(0.0, 1.0);
  Batch b;
  b.dense.resize(rows, cols);
  b.targets.resize(rows);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) b.dense(r, c) = n(rng);
    b.targets[r] = n(rng);
  }
  return b;
}

StepData Step(std::mt19937_64& rng) {
  return StepData{Rows(rng, 4, kFeatures), Rows(rng, 3, kFeatures)};
}

class SimpleSession : public ::testing::TestWithParam<std::string> {};

TEST_P(SimpleSession, RoundsKeepIterateAndDecisionInZAndAreDeterministic) {
  const SessionConfig config = LeastSquaresConfig(GetParam());
  auto a = Session::Create(config);
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = *Session::Create(config);
  std::mt19937_64 rng(3);
  for (int t = 1; t <= 40; ++t) {
    const StepData data = Step(rng);
    auto ra = (*a)->Step(data);
    ASSERT_TRUE(ra.ok()) << "step " << t << ": " << ra.status();
    ASSERT_TRUE(b->Step(data).ok());
    EXPECT_TRUE(std::holds_alternative<SimpleReport>(ra->detail));
    EXPECT_TRUE(config.constraint.Contains((*a)->state().x, 1e-9)) << "step " << t;
    EXPECT_TRUE(config.constraint.Contains((*a)->decision(), 1e-9)) << "step " << t;
  }
  EXPECT_TRUE((*a)->state().BitEquals(b->state()));
  EXPECT_EQ((*a)->state().t, 41);
}

// The report's losses, whoever evaluates them (IR-SCG takes them from its
// own walks over the rows with least_squares' StormPass, the others get
// them from SimpleProblem): f on the step's upper rows at the decision
// served before the step, and g at the iterate x_t the round started from
// (what every algorithm of the class reports as inner_loss_before), bit
// for bit the family's F and G, dense and CSR.
TEST_P(SimpleSession, ReportsTheFamilysLossesBeforeTheStep) {
  const SessionConfig config = LeastSquaresConfig(GetParam());
  auto session = *Session::Create(config);
  auto family = *CreateSimpleFamily(config.family);
  std::mt19937_64 rng(9);
  for (int t = 1; t <= 12; ++t) {
    StepData data = Step(rng);
    if (t % 2 == 0) {
      for (Batch* b : {&data.upper, &data.inner}) {
        b->csr = b->dense.sparseView();
        b->csr.makeCompressed();
        b->sparse_features = true;
        b->dense.resize(0, 0);
      }
    }
    const Vector decision = session->decision(), x = session->state().x;
    auto r = session->Step(data);
    ASSERT_TRUE(r.ok()) << r.status();
    const double f = family->F(decision, BatchView::All(data.upper), nullptr);
    const double g = family->G(x, BatchView::All(data.inner), nullptr);
    EXPECT_EQ(r->upper_loss_before, f) << "step " << t;
    EXPECT_EQ(std::get<SimpleReport>(r->detail).inner_loss_before, g) << "step " << t;
  }
}

TEST_P(SimpleSession, CheckpointResumesBitIdentically) {
  const SessionConfig config = LeastSquaresConfig(GetParam());
  auto straight = *Session::Create(config);
  auto interrupted = *Session::Create(config);
  std::mt19937_64 rng(5);
  std::vector<StepData> stream;
  for (int t = 0; t < 30; ++t) stream.push_back(Step(rng));
  for (int t = 0; t < 30; ++t) ASSERT_TRUE(straight->Step(stream[t]).ok());
  for (int t = 0; t < 13; ++t) ASSERT_TRUE(interrupted->Step(stream[t]).ok());
  auto checkpoint = DeserializeCheckpoint(interrupted->Encode(interrupted->state()));
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  auto resumed = Session::Restore(config, *checkpoint);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  for (int t = 13; t < 30; ++t) ASSERT_TRUE((*resumed)->Step(stream[t]).ok());
  EXPECT_TRUE((*resumed)->state().BitEquals(straight->state()));
}

TEST_P(SimpleSession, BadBatchIsRefusedAndChangesNothing) {
  const SessionConfig config = LeastSquaresConfig(GetParam());
  auto s = *Session::Create(config);
  std::mt19937_64 rng(9);
  ASSERT_TRUE(s->Step(Step(rng)).ok());
  const SessionState before = s->state();
  StepData wide = Step(rng);
  wide.inner = Rows(rng, 3, kFeatures + 1);
  auto r = s->Step(wide);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("inner"));
  StepData nan = Step(rng);
  nan.upper.targets[1] = std::nan("");
  EXPECT_FALSE(s->Step(nan).ok());
  StepData no_inner = Step(rng);
  no_inner.inner = Batch();
  r = s->Step(no_inner);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("at least one inner row"));
  EXPECT_TRUE(s->state().BitEquals(before));
}

TEST_P(SimpleSession, RestoreRefusesADecisionOutsideZ) {
  const SessionConfig config = LeastSquaresConfig(GetParam());
  auto s = *Session::Create(config);
  std::mt19937_64 rng(11);
  for (int t = 0; t < 3; ++t) ASSERT_TRUE(s->Step(Step(rng)).ok());
  Checkpoint c = *DeserializeCheckpoint(s->Encode(s->state()));
  c.state.vectors[kSimpleDecision].setConstant(1.0);  // ||.||_1 = 12 > 2
  auto r = Session::Restore(config, c);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("state.decision: outside"));
}

// A state whose windows are in layout version 2 (stream_windows.h: the
// segments before their padding), as the stores and exports of older
// servers hold it, restores (upgraded) and resumes bit-identically, with
// dense and CSR windows.
TEST(SimpleSessionWindows, StatesOfWindowLayoutVersion2ResumeBitIdentically) {
  for (const std::string algorithm : {"ir_fscg", "agm_bio"}) {
    for (const bool csr : {false, true}) {
      SessionConfig config = LeastSquaresConfig(algorithm);
      config.options.window_rows = 10;
      auto straight = *Session::Create(config);
      auto interrupted = *Session::Create(config);
      std::mt19937_64 rng(5);
      std::vector<StepData> stream;
      for (int t = 0; t < 30; ++t) {
        stream.push_back(Step(rng));
        if (csr) {
          Batch& b = stream.back().inner;
          b.csr = b.dense.sparseView();
          b.csr.makeCompressed();
          b.sparse_features = true;
          b.dense.resize(0, 0);
        }
      }
      for (int t = 0; t < 30; ++t) ASSERT_TRUE(straight->Step(stream[t]).ok());
      for (int t = 0; t < 13; ++t) ASSERT_TRUE(interrupted->Step(stream[t]).ok());
      Checkpoint c = *DeserializeCheckpoint(interrupted->Encode(interrupted->state()));
      const size_t first = algorithm == "ir_fscg" ? 5 : 4;
      ASSERT_TRUE(testing::ToWindowLayoutVersion2(&c.state.aux, first)) << algorithm;
      const std::string old_bytes = SerializeCheckpoint(c);
      absl::StatusOr<Checkpoint> old = DeserializeCheckpoint(old_bytes);
      ASSERT_TRUE(old.ok()) << old.status();
      auto resumed = Session::Restore(config, *old);
      ASSERT_TRUE(resumed.ok()) << algorithm << ": " << resumed.status();
      EXPECT_EQ((*resumed)->state().aux[first][2], 3.0) << "upgraded";
      for (int t = 13; t < 30; ++t) ASSERT_TRUE((*resumed)->Step(stream[t]).ok());
      EXPECT_TRUE((*resumed)->state().BitEquals(straight->state())) << algorithm << " csr " << csr;
    }
  }
}

// The windows' rows of a restored state are checked by the family when the
// state is restored (rounds then trust them): a label the family
// refuses is refused at Restore, naming the window.
TEST(SimpleSessionWindows, RestoreRefusesWindowRowsTheFamilyRefuses) {
  for (const std::string algorithm : {"ir_fscg", "agm_bio"}) {
    SessionConfig config = LeastSquaresConfig(algorithm);
    config.family.name = "logistic";
    config.family.classes = 3;
    auto s = *Session::Create(config);
    std::mt19937_64 rng(5);
    for (int t = 0; t < 3; ++t) {
      StepData d = Step(rng);
      for (Batch* b : {&d.upper, &d.inner}) {
        b->targets.resize(0);
        for (int r = 0; r < b->rows(); ++r) b->labels.push_back(r % 3);
      }
      ASSERT_TRUE(s->Step(d).ok()) << algorithm;
    }
    Checkpoint c = *DeserializeCheckpoint(s->Encode(s->state()));
    ASSERT_TRUE(Session::Restore(config, c).ok()) << algorithm;
    // The upper window's oldest segment (stream_windows.h: the windows
    // from aux[first], the upper header at first + 1 naming its segments'
    // slots from its 5th entry); its labels are its last 4 entries.
    const size_t first = algorithm == "ir_fscg" ? 5 : 4;
    const Vector& header = c.state.aux[first + 1];
    ASSERT_EQ(header.size(), 4 + 3) << algorithm << ": 3 steps, 3 segments";
    const size_t segment = first + 3 + static_cast<size_t>(header[4]);
    Vector& rows = c.state.aux[segment];
    ASSERT_EQ(rows.size(), RowWindow::kSegmentHeader + 4 * kFeatures + 4)
        << algorithm << ": 4 upper rows and labels";
    rows[rows.size() - 2] = 7;  // a class of 3: 0, 1 or 2
    auto r = Session::Restore(config, c);
    ASSERT_FALSE(r.ok()) << algorithm;
    EXPECT_THAT(std::string(r.status().message()),
                HasSubstr(absl::StrCat("state.aux[", segment,
                                       "]: the upper window's rows are not ones this family "
                                       "accepts")))
        << algorithm;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryAlgorithm, SimpleSession,
                         ::testing::ValuesIn(AlgorithmNames(ProblemClass::kSimpleBilevel)));

TEST(SimpleSessionConfig, AlgorithmOfAnotherClassIsRefusedNamingIt) {
  SessionConfig c = LeastSquaresConfig("ir_scg");
  c.algorithm = "f2obo";
  auto s = Session::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("'f2obo' is a bilevel algorithm"));
}

TEST(SimpleSessionConfig, BilevelInitialPointsAreRefused) {
  SessionConfig c = LeastSquaresConfig("ir_scg");
  c.y0 = Vector::Zero(3);
  auto s = Session::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("initial.y"));
}

TEST(SimpleSessionConfig, AStateOfAnotherAlgorithmIsRefused) {
  const std::vector<std::string> names = AlgorithmNames(ProblemClass::kSimpleBilevel);
  ASSERT_GE(names.size(), 2u);
  std::mt19937_64 rng(13);
  for (const std::string& writer : names) {
    auto s = *Session::Create(LeastSquaresConfig(writer));
    for (int t = 0; t < 3; ++t) ASSERT_TRUE(s->Step(Step(rng)).ok());
    Checkpoint c = *DeserializeCheckpoint(s->Encode(s->state()));
    for (const std::string& reader : names) {
      if (reader == writer) continue;
      c.algorithm = reader;  // as if the export's algorithm field were edited
      auto r = Session::Restore(LeastSquaresConfig(reader), c);
      // Either the algorithm names differ (refused) or the aux layout does.
      EXPECT_FALSE(r.ok()) << writer << " -> " << reader;
    }
  }
}

// The metrics of the class on the AGM-BiO paper's linear inverse problem
// (B = 1^T, c = 1 on R^n_+): x* = 1/n, f* = 1/(2n), g* = 0 in closed form.
TEST(SimpleMetrics, LinearInverseGapsVanishAtTheKnownSolutionOnly) {
  constexpr int n = 5;
  FamilyConfig fc;
  fc.name = "linear_inverse";
  fc.features = n;
  auto family = CreateSimpleFamily(fc);
  ASSERT_TRUE(family.ok()) << family.status();
  ConstraintSet orthant = ConstraintSet::Box(0.0, std::numeric_limits<double>::infinity());
  SimpleMetricsEvaluator evaluator(*std::move(family), orthant, n);
  StepData data;
  data.inner.dense = RowMatrix::Ones(1, n);
  data.inner.targets = Vector::Ones(1);
  evaluator.Observe(data);

  auto at_solution = evaluator.Measure(1, Vector::Constant(n, 1.0 / n));
  ASSERT_TRUE(at_solution.ok()) << at_solution.status();
  EXPECT_NEAR(at_solution->g_star, 0.0, 1e-12);
  EXPECT_NEAR(at_solution->inner_gap, 0.0, 1e-12);
  ASSERT_TRUE(at_solution->f_star.has_value());
  EXPECT_NEAR(*at_solution->f_star, 1.0 / (2 * n), 1e-12);
  EXPECT_NEAR(*at_solution->outer_gap, 0.0, 1e-12);
  EXPECT_TRUE(at_solution->g_star_converged);
  EXPECT_FALSE(at_solution->fw_gap.has_value());  // the orthant has no LMO

  // e_1 is inner-optimal (sum = 1) but not the min-norm point: outer gap
  // 1/2 - 1/(2n) > 0, inner gap 0.
  Vector e1 = Vector::Zero(n);
  e1[0] = 1.0;
  auto at_e1 = evaluator.Measure(2, e1);
  ASSERT_TRUE(at_e1.ok());
  EXPECT_NEAR(at_e1->inner_gap, 0.0, 1e-12);
  EXPECT_NEAR(*at_e1->outer_gap, 0.5 - 0.5 / n, 1e-12);
  // 0 is not inner-optimal: g(0) = 1/2.
  auto at_zero = evaluator.Measure(3, Vector::Zero(n));
  ASSERT_TRUE(at_zero.ok());
  EXPECT_NEAR(at_zero->inner_gap, 0.5, 1e-9);
}

TEST(SimpleMetrics, FrankWolfeGapBoundsTheInnerGap) {
  std::mt19937_64 rng(17);
  FamilyConfig fc;
  fc.name = "least_squares";
  fc.features = kFeatures;
  const ConstraintSet ball = ConstraintSet::L1Ball(1.5);
  SimpleMetricsEvaluator evaluator(*CreateSimpleFamily(fc), ball, kFeatures);
  for (int t = 0; t < 5; ++t) evaluator.Observe(Step(rng));
  std::normal_distribution<double> n(0.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    Vector x(kFeatures);
    for (int i = 0; i < kFeatures; ++i) x[i] = n(rng);
    ball.Project(&x);
    auto m = evaluator.Measure(trial + 1, x);
    ASSERT_TRUE(m.ok()) << m.status();
    ASSERT_TRUE(m->g_star_converged);
    ASSERT_TRUE(m->fw_gap.has_value());
    EXPECT_GE(m->inner_gap, 0.0);
    EXPECT_LE(m->inner_gap, *m->fw_gap + 1e-9) << "trial " << trial;
  }
}

TEST(SimpleMetrics, UnconvergedStepsAreCountedNotSummed) {
  RunningMetrics running;
  SimpleMetrics good;
  good.inner_gap = 0.25;
  good.outer_gap = -0.5;
  SimpleMetrics bad = good;
  bad.g_star_converged = false;
  AccumulateSimple(good, &running);
  AccumulateSimple(bad, &running);
  AccumulateSimple(good, &running);
  EXPECT_EQ(running.evaluated_steps, 3);
  EXPECT_DOUBLE_EQ(running.sums[kSimpleInnerGap], 0.5);
  EXPECT_DOUBLE_EQ(running.sums[kSimpleOuterGap], -1.0);
  EXPECT_DOUBLE_EQ(running.sums[kSimpleOuterGapSteps], 2.0);
  EXPECT_DOUBLE_EQ(running.sums[kSimpleUnconvergedSteps], 1.0);
}

}  // namespace
}  // namespace f2obo
