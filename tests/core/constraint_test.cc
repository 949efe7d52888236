#include "core/constraint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/core/constraint_sets.h"

namespace f2obo {
namespace {

using testing::Gaussian;
using testing::kDims;
using testing::NamedSet;
using testing::RandomFeasible;
using testing::SetsAt;
using testing::Vertices;

using ::testing::HasSubstr;
using testing::kInf;

TEST(ConstraintSet, BoxProjectionClampsEachCoordinateToItsOwnBounds) {
  ConstraintSet box;
  box.kind = ConstraintSet::Kind::kBox;
  box.lo = Vector::LinSpaced(3, -1.0, 1.0);  // -1, 0, 1
  box.hi = Vector::Constant(3, 2.0);
  ASSERT_TRUE(box.Validate(3).ok());
  Vector x(3);
  x << -5.0, 0.5, 9.0;
  box.Project(&x);
  EXPECT_EQ(x, (Vector(3) << -1.0, 0.5, 2.0).finished());
  EXPECT_FALSE(box.Validate(4).ok());  // per-coordinate bounds of the wrong size
}

TEST(ConstraintSet, BallProjectionScalesOntoTheSphere) {
  ConstraintSet ball = ConstraintSet::Ball(2.0);
  Vector x(2);
  x << 3.0, 4.0;
  ball.Project(&x);
  EXPECT_NEAR(x.norm(), 2.0, 1e-15);
  EXPECT_NEAR(x[0] / x[1], 0.75, 1e-15);
  Vector inside(2);
  inside << 0.1, -0.2;
  const Vector copy = inside;
  ball.Project(&inside);
  EXPECT_EQ(inside, copy);
  EXPECT_FALSE(ConstraintSet::Ball(0.0).Validate(2).ok());
}

TEST(GradientMapping, EqualsTheGradientInTheInteriorAndVanishesAtActiveBounds) {
  const ConstraintSet box = ConstraintSet::Box(-1.0, 1.0);
  Vector g(2), out(2);
  g << 0.3, -0.2;
  GradientMapping(box, Vector::Zero(2), g, 0.1, &out);
  EXPECT_NEAR((out - g).norm(), 0.0, 1e-15);
  // At x = 1 with a gradient pushing outward, the mapping is 0 (stationary).
  Vector x(2);
  x << 1.0, -1.0;
  g << -0.7, 0.5;
  GradientMapping(box, x, g, 0.1, &out);
  EXPECT_EQ(out.norm(), 0.0);
}

// ---------------------------------------------------------------------------
// Every set on random points.

TEST(ConstraintLmo, MinimizesTheLinearFunctionAgainstVerticesAndRandomPoints) {
  std::mt19937_64 rng(11);
  for (int d : kDims) {
    for (const NamedSet& ns : SetsAt(d, rng, /*with_unbounded=*/false)) {
      const ConstraintSet& set = ns.set;
      ASSERT_TRUE(set.HasLmo()) << ns.name;
      const std::vector<Vector> vertices = Vertices(set, d);
      for (int trial = 0; trial < 20; ++trial) {
        const Vector c = Gaussian(d, rng);
        Vector s;
        set.Lmo(c, &s);
        ASSERT_EQ(s.size(), d);
        EXPECT_TRUE(set.Contains(s, 1e-12)) << ns.name << " d=" << d;
        const double value = c.dot(s);
        EXPECT_NEAR(value, set.MinLinear(c), 1e-12 * (1.0 + std::abs(value))) << ns.name;
        if (!vertices.empty()) {
          double best = kInf;
          for (const Vector& v : vertices) best = std::min(best, c.dot(v));
          EXPECT_NEAR(value, best, 1e-12 * (1.0 + std::abs(best))) << ns.name << " d=" << d;
        }
        for (int k = 0; k < 200; ++k) {
          const Vector z = RandomFeasible(set, d, rng);
          EXPECT_LE(value, c.dot(z) + 1e-12 * (1.0 + std::abs(value))) << ns.name;
        }
        if (set.kind == ConstraintSet::Kind::kBall) {
          // Dense samples of the sphere itself: none beats the oracle.
          const Vector center = set.center.size() != 0 ? set.center : Vector::Zero(d);
          for (int k = 0; k < 500; ++k) {
            Vector dir = Gaussian(d, rng);
            const Vector z = center + set.radius / dir.norm() * dir;
            EXPECT_LE(value, c.dot(z) + 1e-12) << ns.name;
          }
        }
      }
    }
  }
}

TEST(ConstraintLmo, ClosedFormsAndLowestIndexOnTies) {
  Vector s;
  const Vector c = (Vector(4) << 1.0, -2.0, 2.0, 0.5).finished();
  ConstraintSet::L1Ball(3.0).Lmo(c, &s);  // |c| ties at 1 and 2: index 1, sign -
  EXPECT_EQ(s, (Vector(4) << 0.0, 3.0, 0.0, 0.0).finished());
  const Vector t = (Vector(4) << 2.0, 1.0, 1.0, 3.0).finished();
  ConstraintSet::Simplex(2.0).Lmo(t, &s);  // min ties at 1 and 2: index 1
  EXPECT_EQ(s, (Vector(4) << 0.0, 2.0, 0.0, 0.0).finished());
  ConstraintSet::Ball(2.0).Lmo((Vector(2) << 3.0, -4.0).finished(), &s);
  EXPECT_NEAR((s - (Vector(2) << -1.2, 1.6).finished()).norm(), 0.0, 1e-15);
  ConstraintSet centered = ConstraintSet::Ball(2.0);
  centered.center = (Vector(2) << 1.0, 1.0).finished();
  centered.Lmo(Vector::Zero(2), &s);  // c = 0: the centre
  EXPECT_EQ(s, centered.center);
  ConstraintSet::Box(-1.0, 2.0).Lmo((Vector(3) << 1.0, -1.0, 0.0).finished(), &s);
  EXPECT_EQ(s, (Vector(3) << -1.0, 2.0, -1.0).finished());  // c_i = 0 -> lo
  // Huge c: the norm of the squares overflows, the direction must not.
  ConstraintSet::Ball(1.0).Lmo((Vector(2) << 3e200, 4e200).finished(), &s);
  EXPECT_NEAR(s[0], -0.6, 1e-15);
  EXPECT_NEAR(s[1], -0.8, 1e-15);
}

TEST(ConstraintLmo, OnlyCompactSetsHaveOneAndOthersGiveNaN) {
  EXPECT_TRUE(ConstraintSet::Ball(1.0).HasLmo());
  EXPECT_TRUE(ConstraintSet::L1Ball(1.0).HasLmo());
  EXPECT_TRUE(ConstraintSet::Simplex().HasLmo());
  EXPECT_TRUE(ConstraintSet::Box(-1.0, 1.0).HasLmo());
  EXPECT_FALSE(ConstraintSet::Box(0.0, kInf).HasLmo());  // the orthant
  EXPECT_FALSE(ConstraintSet::None().HasLmo());
  ConstraintSet half;
  half.kind = ConstraintSet::Kind::kBox;
  half.lo = (Vector(2) << 0.0, -kInf).finished();
  half.hi = Vector::Constant(1, 1.0);
  EXPECT_FALSE(half.HasLmo());
  Vector s;
  ConstraintSet::Box(0.0, kInf).Lmo(Vector::Ones(3), &s);
  ASSERT_EQ(s.size(), 3);
  EXPECT_TRUE(s.array().isNaN().all());
}

TEST(ConstraintProject, SatisfiesTheVariationalInequalityOnEverySet) {
  std::mt19937_64 rng(12);
  for (int d : kDims) {
    for (const NamedSet& ns : SetsAt(d, rng, /*with_unbounded=*/true)) {
      const ConstraintSet& set = ns.set;
      for (int trial = 0; trial < 30; ++trial) {
        const Vector x = Gaussian(d, rng, trial < 10 ? 0.3 : 5.0);
        Vector p = x;
        set.Project(&p);
        EXPECT_TRUE(set.Contains(p, 1e-12)) << ns.name << " d=" << d;
        // Idempotent.
        Vector pp = p;
        set.Project(&pp);
        EXPECT_LE((pp - p).norm(), 1e-12 * (1.0 + p.norm())) << ns.name;
        for (int k = 0; k < 100; ++k) {
          const Vector z = RandomFeasible(set, d, rng);
          EXPECT_LE((x - p).dot(z - p), 1e-10) << ns.name << " d=" << d;
        }
      }
    }
  }
}

TEST(ConstraintProject, L1BallAndSimplexKnownPoints) {
  Vector x = (Vector(2) << 3.0, 1.0).finished();
  ConstraintSet::L1Ball(2.0).Project(&x);
  EXPECT_NEAR((x - (Vector(2) << 2.0, 0.0).finished()).norm(), 0.0, 1e-15);
  x = (Vector(3) << -2.0, 2.0, 0.5).finished();
  ConstraintSet::L1Ball(1.0).Project(&x);  // tau = 1.5: (-0.5, 0.5, 0)
  EXPECT_NEAR((x - (Vector(3) << -0.5, 0.5, 0.0).finished()).norm(), 0.0, 1e-15);
  x = (Vector(2) << 1.0, 1.0).finished();
  ConstraintSet::Simplex().Project(&x);
  EXPECT_NEAR((x - (Vector(2) << 0.5, 0.5).finished()).norm(), 0.0, 1e-15);
  x = (Vector(3) << -5.0, 0.2, 0.1).finished();
  ConstraintSet::Simplex().Project(&x);  // tau = -0.35: (0, 0.55, 0.45)
  EXPECT_NEAR((x - (Vector(3) << 0.0, 0.55, 0.45).finished()).norm(), 0.0, 1e-15);
  x = Vector::Constant(1, -7.0);
  ConstraintSet::Simplex(2.5).Project(&x);  // d = 1: the single point
  EXPECT_EQ(x[0], 2.5);
  // Inside the l1 ball: unchanged.
  x = (Vector(2) << 0.3, -0.4).finished();
  const Vector copy = x;
  ConstraintSet::L1Ball(1.0).Project(&x);
  EXPECT_EQ(x, copy);
}

TEST(ConstraintProject, ProjectedPointsAreContainedWithZeroTolerance) {
  std::mt19937_64 rng(13);
  for (const ConstraintSet& set : {ConstraintSet::Simplex(1.0), ConstraintSet::L1Ball(3.0)}) {
    for (int trial = 0; trial < 20; ++trial) {
      Vector x = Gaussian(1000, rng, 2.0);
      set.Project(&x);
      EXPECT_TRUE(set.Contains(x));
    }
  }
  EXPECT_FALSE(ConstraintSet::Simplex().Contains((Vector(2) << 0.5, 0.49).finished()));
  EXPECT_FALSE(ConstraintSet::Simplex().Contains((Vector(2) << 1.1, -0.1).finished()));
  EXPECT_FALSE(ConstraintSet::L1Ball(1.0).Contains((Vector(2) << 0.5, -0.51).finished()));
}

TEST(ConstraintProject, NonFiniteInputGivesNaNNotACrash) {
  for (const ConstraintSet& set : {ConstraintSet::Simplex(), ConstraintSet::L1Ball(1.0)}) {
    Vector x = (Vector(3) << 1.0, std::nan(""), 2.0).finished();
    set.Project(&x);
    EXPECT_TRUE(x.array().isNaN().all());
  }
}

TEST(ConstraintSetLowerBound, IsTheTightBoundOfEachSet) {
  EXPECT_EQ(ConstraintSet::Simplex().LowerBound(0), 0.0);
  ConstraintSet l1 = ConstraintSet::L1Ball(2.0);
  EXPECT_EQ(l1.LowerBound(1), -2.0);
  l1.center = (Vector(2) << 1.0, 5.0).finished();
  EXPECT_EQ(l1.LowerBound(1), 3.0);
  EXPECT_EQ(ConstraintSet::Ball(1.0).LowerBound(0), -kInf);
  EXPECT_EQ(ConstraintSet::Box(-0.5, 1.0).LowerBound(3), -0.5);
}

// ---------------------------------------------------------------------------
// Validate.

TEST(ConstraintValidate, NamesTheFieldOfEachNewSet) {
  for (double r : {0.0, -1.0, kInf, std::nan("")}) {
    EXPECT_EQ(ConstraintSet::L1Ball(r).Validate(3).message(),
              "constraint.l1_ball.radius: must be finite and > 0");
    EXPECT_EQ(ConstraintSet::Simplex(r).Validate(3).message(),
              "constraint.simplex.total: must be finite and > 0");
  }
  ConstraintSet l1 = ConstraintSet::L1Ball(1.0);
  l1.center = Vector::Zero(2);
  EXPECT_EQ(l1.Validate(3).message(),
            "constraint.l1_ball.center: has 2 entries, expected 0 or x_dim = 3");
  l1.center = (Vector(3) << 0.0, kInf, 0.0).finished();
  EXPECT_EQ(l1.Validate(3).message(), "constraint.l1_ball.center: not finite");
  EXPECT_EQ(ConstraintSet::L1Ball(1.0).Validate(3).code(), absl::StatusCode::kOk);
  EXPECT_EQ(ConstraintSet::Simplex().Validate(3).code(), absl::StatusCode::kOk);
  EXPECT_EQ(ConstraintSet::Simplex().radius, 1.0);
  // The orthant is a box.
  EXPECT_TRUE(ConstraintSet::Box(0.0, kInf).Validate(4).ok());
  EXPECT_EQ(ConstraintSet::Ball(-1.0).Validate(2).message(),
            "constraint.ball.radius: must be finite and > 0");
}

}  // namespace
}  // namespace f2obo
