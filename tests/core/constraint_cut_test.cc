// ConstraintSet::ProjectOntoCut: the projection onto the set intersected
// with a halfspace, against an independent exact reference on polytopes, the
// ball's closed form, contact points, empty intersections and scaling.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/constraint.h"
#include "tests/core/constraint_sets.h"

namespace f2obo {
namespace {

using testing::Gaussian;
using ::testing::HasSubstr;
using testing::kDims;
using testing::kInf;
using testing::NamedSet;
using testing::RandomFeasible;
using testing::SetsAt;

// ---------------------------------------------------------------------------
// ProjectOntoCut.

// An independent exact reference for polytopes in d <= 3: Z ∩ {<a,z> <= b}
// as {C z <= e} (plus sum z = total for the simplex); the projection is the
// projection of x onto the affine hull {C_S z = e_S} of some active set S,
// so the nearest of the feasible such candidates over every S with
// |S| <= d is the projection.  Empty for other sets or d > 3.
std::vector<Vector> PolytopeCutCandidates(const ConstraintSet& set, const Vector& a, double b,
                                          const Vector& x) {
  const int d = static_cast<int>(x.size());
  if (d > 3) return {};
  std::vector<Vector> rows;
  std::vector<double> rhs;
  auto add = [&](const Vector& r, double e) {
    rows.push_back(r);
    rhs.push_back(e);
  };
  const Vector c = set.center.size() != 0 ? set.center : Vector::Zero(d);
  bool simplex = false;
  switch (set.kind) {
    case ConstraintSet::Kind::kBox:
      for (int i = 0; i < d; ++i) {
        add(Vector::Unit(d, i), set.hi.size() == 1 ? set.hi[0] : set.hi[i]);
        add(-Vector::Unit(d, i), -set.LowerBound(i));
      }
      break;
    case ConstraintSet::Kind::kSimplex:
      simplex = true;
      for (int i = 0; i < d; ++i) add(-Vector::Unit(d, i), 0.0);
      break;
    case ConstraintSet::Kind::kL1Ball:
      for (int mask = 0; mask < (1 << d); ++mask) {
        Vector sgn(d);
        for (int i = 0; i < d; ++i) sgn[i] = (mask >> i) & 1 ? -1.0 : 1.0;
        add(sgn, set.radius + sgn.dot(c));
      }
      break;
    default:
      return {};
  }
  add(a, b);
  const int m = static_cast<int>(rows.size());
  std::vector<Vector> feasible;
  for (int mask = 0; mask < (1 << m); ++mask) {
    const int k = __builtin_popcount(mask) + (simplex ? 1 : 0);
    if (k > d) continue;
    Matrix cs(k, d);
    Vector es(k);
    int r = 0;
    if (simplex) {
      cs.row(r) = Vector::Ones(d).transpose();
      es[r++] = set.radius;
    }
    for (int i = 0; i < m; ++i) {
      if ((mask >> i) & 1) {
        cs.row(r) = rows[i].transpose();
        es[r++] = rhs[i];
      }
    }
    Vector z = x;
    if (k > 0) {
      Eigen::CompleteOrthogonalDecomposition<Matrix> cod(cs);
      z = x - cod.solve(cs * x - es);
      if ((cs * z - es).norm() > 1e-9) continue;  // inconsistent equalities
    }
    bool ok = true;
    for (int i = 0; i < m; ++i) ok = ok && rows[i].dot(z) <= rhs[i] + 1e-9;
    if (simplex) ok = ok && std::abs(z.sum() - set.radius) <= 1e-9;
    if (ok) feasible.push_back(z);
  }
  return feasible;
}

TEST(ConstraintCut, ProjectsOntoTheIntersectionOnEverySet) {
  std::mt19937_64 rng(14);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int active_cases = 0, inactive_cases = 0, reference_cases = 0;
  for (int d : kDims) {
    for (const NamedSet& ns : SetsAt(d, rng, /*with_unbounded=*/true)) {
      const ConstraintSet& set = ns.set;
      for (int trial = 0; trial < 12; ++trial) {
        const Vector a = Gaussian(d, rng);
        // b at a random quantile of <a, z> over random points of Z (above the
        // minimum, so the intersection is not empty).
        std::vector<Vector> samples;
        std::vector<double> values;
        for (int k = 0; k < 300; ++k) {
          samples.push_back(RandomFeasible(set, d, rng));
          values.push_back(a.dot(samples.back()));
        }
        std::vector<double> sorted = values;
        std::sort(sorted.begin(), sorted.end());
        const double b = sorted[static_cast<size_t>((0.1 + 0.8 * u(rng)) * sorted.size())];
        const Vector x = Gaussian(d, rng, trial % 2 == 0 ? 1.0 : 4.0) + (trial % 3) * a;
        Vector z = x;
        ASSERT_TRUE(set.ProjectOntoCut(a, b, &z).ok()) << ns.name;
        const double tol = 1e-10 * (1.0 + x.norm() + std::abs(b));
        EXPECT_TRUE(set.Contains(z, 1e-10)) << ns.name << " d=" << d;
        EXPECT_LE(a.dot(z), b + tol) << ns.name << " d=" << d;
        Vector plain = x;
        set.Project(&plain);
        if (a.dot(plain) <= b) {
          ++inactive_cases;
          EXPECT_LE((z - plain).norm(), 1e-12 * (1.0 + plain.norm())) << ns.name;
        } else {
          ++active_cases;
          EXPECT_NEAR(a.dot(z), b, tol) << ns.name << " d=" << d;  // the cut binds
        }
        // Variational inequality against points of the intersection: the
        // samples below the cut, and samples pulled onto the hyperplane
        // towards a point of the intersection (z itself).
        for (size_t k = 0; k < samples.size(); ++k) {
          Vector w = samples[k];
          if (values[k] > b) {
            const double t = (values[k] - b) / (values[k] - a.dot(z));
            w = samples[k] + std::min(t, 1.0) * (z - samples[k]);
          }
          EXPECT_LE((x - z).dot(w - z), tol * (1.0 + (w - z).norm()))
              << ns.name << " d=" << d << " trial " << trial;
        }
        const std::vector<Vector> candidates = PolytopeCutCandidates(set, a, b, x);
        if (!candidates.empty()) {
          ++reference_cases;
          double nearest = kInf;
          for (const Vector& w : candidates) nearest = std::min(nearest, (x - w).norm());
          EXPECT_NEAR((x - z).norm(), nearest, 1e-9 * (1.0 + nearest)) << ns.name << " d=" << d;
        }
      }
    }
  }
  // Both branches were exercised in earnest.
  EXPECT_GT(active_cases, 200);
  EXPECT_GT(inactive_cases, 50);
  EXPECT_GT(reference_cases, 150);
}

TEST(ConstraintCut, BallClosedFormCoversItsThreeCases) {
  const ConstraintSet ball = ConstraintSet::Ball(1.0);
  const Vector a = (Vector(2) << 1.0, 0.0).finished();
  // 1. P_ball(x) already satisfies the cut.
  Vector z = (Vector(2) << -3.0, 4.0).finished();
  ASSERT_TRUE(ball.ProjectOntoCut(a, 0.5, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << -0.6, 0.8).finished()).norm(), 0.0, 1e-15);
  // 2. The halfspace projection lies in the ball.
  z = (Vector(2) << 0.9, 0.1).finished();
  ASSERT_TRUE(ball.ProjectOntoCut(a, 0.5, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << 0.5, 0.1).finished()).norm(), 0.0, 1e-15);
  // 3. Both bind: the circle point (0.5, sqrt(0.75)).
  z = (Vector(2) << 2.0, 2.0).finished();
  ASSERT_TRUE(ball.ProjectOntoCut(a, 0.5, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << 0.5, std::sqrt(0.75)).finished()).norm(), 0.0, 1e-15);
  // x parallel to a: case 2 (the halfspace projection (0.5, 0) is inside).
  z = (Vector(2) << 5.0, 0.0).finished();
  ASSERT_TRUE(ball.ProjectOntoCut(a, 0.5, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << 0.5, 0.0).finished()).norm(), 0.0, 1e-15);
  // d = 1: the interval [-1, 1] cut at 0.5.
  z = Vector::Constant(1, 3.0);
  ASSERT_TRUE(ball.ProjectOntoCut(Vector::Ones(1), 0.5, &z).ok());
  EXPECT_EQ(z[0], 0.5);
}

TEST(ConstraintCut, NoneUsesTheHalfspaceClosedForm) {
  Vector z = (Vector(2) << 3.0, 1.0).finished();
  ASSERT_TRUE(
      ConstraintSet::None().ProjectOntoCut((Vector(2) << 1.0, 1.0).finished(), 2.0, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << 2.0, 0.0).finished()).norm(), 0.0, 1e-15);
}

TEST(ConstraintCut, TouchingSetsGiveTheContactPoint) {
  // The simplex meets {<a,z> <= 1} at the vertex e_0 only.
  Vector z = (Vector(3) << 0.2, 0.9, 0.4).finished();
  const Vector a = (Vector(3) << 1.0, 2.0, 3.0).finished();
  ASSERT_TRUE(ConstraintSet::Simplex().ProjectOntoCut(a, 1.0, &z).ok());
  EXPECT_NEAR((z - Vector::Unit(3, 0)).norm(), 0.0, 1e-9);
  // The box [-1, 2]^2 meets {z_0 + z_1 <= -2} at its corner.
  z = (Vector(2) << 1.0, 0.0).finished();
  ASSERT_TRUE(ConstraintSet::Box(-1.0, 2.0).ProjectOntoCut(Vector::Ones(2), -2.0, &z).ok());
  EXPECT_NEAR((z - Vector::Constant(2, -1.0)).norm(), 0.0, 1e-9);
}

TEST(ConstraintCut, RefusesAnEmptyIntersection) {
  const Vector a = (Vector(3) << 1.0, -2.0, 0.5).finished();
  std::mt19937_64 rng(15);
  for (const NamedSet& ns : SetsAt(3, rng, /*with_unbounded=*/false)) {
    const double m = ns.set.MinLinear(a);
    Vector z = Vector::Ones(3);
    const absl::Status s = ns.set.ProjectOntoCut(a, m - 0.1, &z);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << ns.name;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("cutting plane: Z ∩ {<a,z> <= b} is empty (min <a,z> over Z = "))
        << ns.name;
  }
  // The orthant with a > 0 below 0.
  Vector z = Vector::Ones(2);
  absl::Status s = ConstraintSet::Box(0.0, kInf).ProjectOntoCut(Vector::Ones(2), -1.0, &z);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("min <a,z> over Z = 0, b = -1"));
  // a = 0: b < 0 is empty everywhere, even on R^d; b >= 0 is the plain projection.
  s = ConstraintSet::None().ProjectOntoCut(Vector::Zero(2), -1.0, &z);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  z = (Vector(2) << 3.0, 4.0).finished();
  ASSERT_TRUE(ConstraintSet::Ball(1.0).ProjectOntoCut(Vector::Zero(2), 0.0, &z).ok());
  EXPECT_NEAR((z - (Vector(2) << 0.6, 0.8).finished()).norm(), 0.0, 1e-15);
  // Bad arguments.
  EXPECT_EQ(ConstraintSet::None().ProjectOntoCut(Vector::Ones(3), 0.0, &z).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ConstraintSet::None().ProjectOntoCut(Vector::Ones(2), std::nan(""), &z).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ConstraintCut, HugeAndTinyCutsAreScaleInvariant) {
  const ConstraintSet set = ConstraintSet::L1Ball(1.0);
  const Vector a = (Vector(3) << 1.0, -0.3, 0.2).finished();
  const Vector x = (Vector(3) << 2.0, 1.0, -1.0).finished();
  Vector ref = x;
  ASSERT_TRUE(set.ProjectOntoCut(a, 0.1, &ref).ok());
  for (double s : {1e-150, 1e150}) {
    Vector z = x;
    ASSERT_TRUE(set.ProjectOntoCut(s * a, s * 0.1, &z).ok());
    EXPECT_LE((z - ref).norm(), 1e-12);
  }
}

}  // namespace
}  // namespace f2obo
