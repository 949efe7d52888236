// Rows a windowed algorithm accepted must never block its later ordinary
// steps: every algorithm of the class that keeps rows (found through the
// registry) on every kind of constraint set, fed rows at the input bound
// (kMaxInputMagnitude = 1e150) in several shapes.  Each such step may be
// refused on arrival; once accepted, its rows stay in the window for
// window_rows rows, and every ordinary step after them must be applied.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "core/simple/simple_registries.h"

namespace f2obo {
namespace {

constexpr int kFeatures = 10;
constexpr double kBig = kMaxInputMagnitude;

struct NamedSet {
  std::string name;
  ConstraintSet set;
};

// One set of every kind (and the unbounded box, the paper's R^n_+).
std::vector<NamedSet> EveryKind() {
  const double inf = std::numeric_limits<double>::infinity();
  return {{"none", ConstraintSet::None()},           {"box", ConstraintSet::Box(-2.0, 2.0)},
          {"orthant", ConstraintSet::Box(0.0, inf)}, {"ball", ConstraintSet::Ball(2.0)},
          {"l1_ball", ConstraintSet::L1Ball(2.0)},   {"simplex", ConstraintSet::Simplex(1.0)}};
}

Batch Ordinary(std::mt19937_64& rng, int rows) {
  std::normal_distribution<double> n(0.0, 1.0);
  Batch b;
  b.dense.resize(rows, kFeatures);
  b.targets.resize(rows);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < kFeatures; ++c) b.dense(r, c) = n(rng);
    b.targets[r] = n(rng);
  }
  return b;
}

// Rows at the input bound, in the shapes of the reports, step k of a run
// of them: one entry of each row at +-1e150 on a coordinate that moves
// with k (their Gram matrix's lambda_max ~ 1e299 made the power
// iteration's norm overflow: L_g came out at about half of it and AGM-BiO's
// run on g diverged until its level overflowed, "cutting plane: a or b is
// not finite" at every later step), every entry and the target at 1e150,
// a large target on ordinary features.
Batch Extreme(int shape, int k, std::mt19937_64& rng) {
  Batch b = Ordinary(rng, 4);
  for (int r = 0; r < 4; ++r) {
    const double sign = (r + k) % 2 == 0 ? 1.0 : -1.0;
    switch (shape) {
      case 0:
        b.dense(r, (r + k) % kFeatures) = sign * kBig;
        break;
      case 1:
        b.dense.row(r).setConstant(kBig);
        b.targets[r] = sign * kBig;
        break;
      default:
        b.targets[r] = sign * kBig;
        break;
    }
  }
  return b;
}

std::vector<const SimpleAlgorithmEntry*> Windowed() {
  std::vector<const SimpleAlgorithmEntry*> out;
  for (const SimpleAlgorithmEntry* e : SimpleAlgorithms()) {
    if (e->info.keeps_rows) out.push_back(e);
  }
  return out;
}

TEST(ExtremeRows, TheRegistryHasWindowedAlgorithms) { EXPECT_GE(Windowed().size(), 2u); }

TEST(ExtremeRows, AcceptedRowsAtTheInputBoundNeverBlockLaterOrdinarySteps) {
  for (const SimpleAlgorithmEntry* e : Windowed()) {
    for (const NamedSet& z : EveryKind()) {
      const std::string where = absl::StrCat(e->info.name, " on ", z.name);
      SessionConfig c;
      c.problem_class = ProblemClass::kSimpleBilevel;
      c.family.name = "least_squares";
      c.family.features = kFeatures;
      c.algorithm = e->info.name;
      c.options = DefaultAlgorithmOptions(e->info.name);
      c.options.window_rows = 64;
      c.constraint = z.set;
      c.seed = 3;
      absl::StatusOr<std::unique_ptr<Session>> s = Session::Create(c);
      if (!s.ok()) continue;  // a set the algorithm refuses (no LMO)
      std::mt19937_64 rng(11);
      for (int k = 0; k < 4; ++k) {
        ASSERT_TRUE((*s)->Step({Ordinary(rng, 4), Ordinary(rng, 4)}).ok()) << where;
      }
      int accepted = 0;
      for (int shape = 0; shape < 3; ++shape) {
        for (const bool upper : {false, true}) {
          for (int k = 0; k < 5; ++k) {
            const Batch big = Extreme(shape, k, rng);
            const StepData data{upper ? big : Ordinary(rng, 4), upper ? Ordinary(rng, 4) : big};
            if ((*s)->Step(data).ok()) ++accepted;
          }
          for (int k = 0; k < 40; ++k) {
            const absl::StatusOr<StepReport> r = (*s)->Step({Ordinary(rng, 4), Ordinary(rng, 4)});
            ASSERT_TRUE(r.ok()) << where << ", shape " << shape << (upper ? " upper" : " inner")
                                << ", ordinary step " << k << " after " << accepted
                                << " extreme ones accepted: " << r.status();
            ASSERT_TRUE((*s)->state().x.allFinite()) << where;
          }
        }
      }
      // Over an unbounded set no row bound applies: they are accepted.
      if (!(z.set.MaxAbsCoordinate() < kBig)) {
        EXPECT_GT(accepted, 0) << where;
      }
    }
  }
}

}  // namespace
}  // namespace f2obo
