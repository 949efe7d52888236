// Every simple bilevel algorithm in the registry, without listing them:
// its entry, its aux layout (InitialAux accepted, wrong shapes refused
// naming aux[i]), bit-identical trajectories, and a resume from a copied
// state (a checkpoint) that continues exactly as the uninterrupted run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/simple/simple_registries.h"
#include "tests/core/simple/algorithms/simple_test_support.h"

namespace f2obo::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int kDim = 8;

class EverySimpleAlgorithm : public ::testing::TestWithParam<const SimpleAlgorithmEntry*> {
 protected:
  EverySimpleAlgorithm() : p_(kDim, 4, 12, 0.1, 3), family_("least_squares", kDim) {}

  std::unique_ptr<SimpleAlgorithm> Make() {
    return MakeAlgorithm(GetParam()->info.name, z_, kDim,
                         [](AlgorithmOptions* o) { o->window_rows = 16; });
  }
  // `steps` steps of 3 rows of each kind from a stream seeded by `seed`.
  void Advance(SimpleAlgorithm& a, SimpleRun* run, int steps, uint64_t seed) {
    Rng data(seed + static_cast<uint64_t>(run->t));
    for (int k = 0; k < steps; ++k) {
      ASSERT_TRUE(run->Step(a, family_, p_.DrawStep(3, &data)).ok()) << "t = " << run->t;
    }
  }

  OverParameterizedRegression p_;
  RegisteredFamily family_;
  const ConstraintSet z_ = ConstraintSet::L1Ball(1.5);
};

TEST_P(EverySimpleAlgorithm, EntryBelongsToTheClassAndItsSettingsValidate) {
  const AlgorithmInfo& info = GetParam()->info;
  EXPECT_EQ(info.problem_class, ProblemClass::kSimpleBilevel);
  EXPECT_EQ(FindSimpleAlgorithm(info.name), GetParam());
  EXPECT_FALSE(info.reads.empty());
  EXPECT_TRUE(ValidateAlgorithmOptions(info, DefaultOptions(info)).ok());
  ASSERT_NE(info.experiment, nullptr);
  AlgorithmOptions paper = DefaultOptions(info);
  info.experiment(&paper);
  EXPECT_TRUE(ValidateAlgorithmOptions(info, paper).ok());
}

TEST_P(EverySimpleAlgorithm, InitialAuxIsAcceptedAndWrongShapesAreRefusedByIndex) {
  std::unique_ptr<SimpleAlgorithm> a = Make();
  ASSERT_NE(a, nullptr);
  const StateParts aux = a->InitialAux(Vector::Zero(kDim));
  ASSERT_TRUE(a->ValidateAux(aux).ok()) << a->ValidateAux(aux);
  const int n = static_cast<int>(aux.size());

  StateParts shorter = aux;
  shorter.resize(aux.size() - 1);
  absl::Status st = a->ValidateAux(shorter);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), StartsWith("aux[" + std::to_string(n - 1) + "]: missing"));

  // One vector too many: unexpected, or for the windowed algorithms (whose
  // window segments follow) a segment slot no window names.
  StateParts longer = aux;
  longer.push_back(Vector::Zero(1));
  st = a->ValidateAux(longer);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), StartsWith("aux[" + std::to_string(n) + "]: "));

  StateParts resized = aux;
  resized[0].resize(kDim + 1);
  st = a->ValidateAux(resized);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), StartsWith("aux[0]: has 9 entries, expected 8"));

  for (int i = 0; i < n; ++i) {  // every vector's length is checked
    StateParts bad = aux;
    bad[i].resize(bad[i].size() + 3);
    st = a->ValidateAux(bad);
    EXPECT_FALSE(st.ok()) << "aux[" << i << "]";
    EXPECT_THAT(std::string(st.message()), HasSubstr("aux[")) << i;
  }
}

TEST_P(EverySimpleAlgorithm, SameStreamAndSeedGiveBitIdenticalTrajectories) {
  std::unique_ptr<SimpleAlgorithm> a = Make(), b = Make();
  ASSERT_NE(a, nullptr);
  SimpleRun one(*a, Vector::Zero(kDim), 42), two(*b, Vector::Zero(kDim), 42);
  Advance(*a, &one, 40, 9);
  Advance(*b, &two, 40, 9);
  EXPECT_TRUE(one.BitEquals(two));
  EXPECT_TRUE(one.decision.allFinite());
  EXPECT_TRUE(z_.Contains(one.decision, 1e-12));
  EXPECT_TRUE(a->ValidateAux(one.aux).ok()) << a->ValidateAux(one.aux);
}

// A state copied mid-run (what a checkpoint holds) and driven by a fresh
// instance continues exactly as the run that never stopped.
TEST_P(EverySimpleAlgorithm, ResumingFromACopiedStateContinuesBitIdentically) {
  std::unique_ptr<SimpleAlgorithm> a = Make();
  ASSERT_NE(a, nullptr);
  SimpleRun straight(*a, Vector::Zero(kDim), 5);
  Advance(*a, &straight, 25, 1);
  SimpleRun resumed = straight;
  Advance(*a, &straight, 25, 2);

  std::unique_ptr<SimpleAlgorithm> fresh = Make();
  ASSERT_TRUE(fresh->ValidateAux(resumed.aux).ok());
  Advance(*fresh, &resumed, 25, 2);
  EXPECT_TRUE(straight.BitEquals(resumed));
}

// Rows of the other kinds the families take: CSR least-squares rows, and
// logistic rows (labels; x = W is features x classes, so x_dim is not the
// rows' width).  The runs stay in Z, finite, and their aux valid.
TEST_P(EverySimpleAlgorithm, RunsOnCsrRowsAndOnClassificationRows) {
  constexpr int kFeatures = 5, kClasses = 3;
  struct Case {
    const char* family;
    int x_dim;
    bool csr;
  };
  for (const Case& c :
       {Case{"least_squares", kFeatures, true}, Case{"logistic", kFeatures * kClasses, false}}) {
    SCOPED_TRACE(c.family);
    RegisteredFamily family(c.family, kFeatures, kClasses);
    std::unique_ptr<SimpleAlgorithm> a = MakeAlgorithm(
        GetParam()->info.name, z_, c.x_dim, [](AlgorithmOptions* o) { o->window_rows = 7; });
    ASSERT_NE(a, nullptr);
    SimpleRun run(*a, Vector::Zero(c.x_dim), 3);
    Rng data(17);
    for (int k = 0; k < 30; ++k) {
      StepData step;
      for (Batch* b : {&step.upper, &step.inner}) {
        const int rows = 1 + static_cast<int>(data.UniformBelow(3));
        Matrix m(rows, kFeatures);
        for (int i = 0; i < rows; ++i) {
          for (int j = 0; j < kFeatures; ++j) {
            // About half the entries 0, the rest in [-1, 1].
            const uint64_t u = data.UniformBelow(5);
            m(i, j) = u < 2 ? 0.0 : (static_cast<double>(u) - 3.0);
          }
        }
        if (c.csr) {
          b->sparse_features = true;
          b->csr = m.sparseView();
        } else {
          b->dense = m;
        }
        if (std::string(c.family) == "logistic") {
          for (int i = 0; i < rows; ++i)
            b->labels.push_back(static_cast<int32_t>(data.UniformBelow(kClasses)));
        } else {
          b->targets = Vector::LinSpaced(rows, -1.0, 1.0);
        }
        ASSERT_TRUE(
            family.ValidateBatch(*b, b == &step.upper ? BatchRole::kUpper : BatchRole::kInner)
                .ok());
      }
      ASSERT_TRUE(run.Step(*a, family, step).ok()) << "t = " << run.t;
    }
    EXPECT_TRUE(run.decision.allFinite());
    EXPECT_TRUE(z_.Contains(run.decision, 1e-12));
    EXPECT_TRUE(a->ValidateAux(run.aux).ok()) << a->ValidateAux(run.aux);
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EverySimpleAlgorithm, ::testing::ValuesIn(SimpleAlgorithms()),
                         [](const ::testing::TestParamInfo<const SimpleAlgorithmEntry*>& i) {
                           return std::string(i.param->info.name);
                         });

TEST(SimpleAlgorithmRegistry, ListsThePapersAlgorithmsOnce) {
  std::vector<std::string> names;
  for (const SimpleAlgorithmEntry* e : SimpleAlgorithms()) names.emplace_back(e->info.name);
  EXPECT_THAT(names, ::testing::ElementsAre("ir_scg", "ir_fscg", "agm_bio"));
  EXPECT_EQ(FindSimpleAlgorithm("f2obo"), nullptr);
}

}  // namespace
}  // namespace f2obo::testing
