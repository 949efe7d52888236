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

namespace f2obo {
namespace {

using ::testing::HasSubstr;
constexpr double kInf = std::numeric_limits<double>::infinity();

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

struct NamedSet {
  std::string name;
  ConstraintSet set;
};

Vector Gaussian(int d, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> n(0.0, scale);
  Vector v(d);
  for (int i = 0; i < d; ++i) v[i] = n(rng);
  return v;
}

// The sets of the class at dimension d (centres and per-coordinate bounds drawn).
std::vector<NamedSet> SetsAt(int d, std::mt19937_64& rng, bool with_unbounded) {
  std::vector<NamedSet> sets;
  sets.push_back({"ball", ConstraintSet::Ball(1.5)});
  ConstraintSet ball = ConstraintSet::Ball(0.7);
  ball.center = Gaussian(d, rng);
  sets.push_back({"ball_centered", ball});
  sets.push_back({"l1_ball", ConstraintSet::L1Ball(2.0)});
  ConstraintSet l1 = ConstraintSet::L1Ball(0.5);
  l1.center = Gaussian(d, rng);
  sets.push_back({"l1_ball_centered", l1});
  sets.push_back({"simplex", ConstraintSet::Simplex()});
  sets.push_back({"simplex_3", ConstraintSet::Simplex(3.0)});
  sets.push_back({"box_scalar", ConstraintSet::Box(-1.0, 2.0)});
  ConstraintSet box;
  box.kind = ConstraintSet::Kind::kBox;
  box.lo = Gaussian(d, rng);
  box.hi = box.lo + Gaussian(d, rng).cwiseAbs();
  box.hi[0] = box.lo[0];  // a degenerate coordinate
  sets.push_back({"box", box});
  if (with_unbounded) {
    sets.push_back({"orthant", ConstraintSet::Box(0.0, kInf)});
    ConstraintSet half;
    half.kind = ConstraintSet::Kind::kBox;
    half.lo = Vector::Constant(d, -kInf);
    half.hi = Gaussian(d, rng);
    sets.push_back({"box_upper_only", half});
    sets.push_back({"none", ConstraintSet::None()});
  }
  for (const NamedSet& s : sets) EXPECT_TRUE(s.set.Validate(d).ok()) << s.name;
  return sets;
}

// A random point of the set: half the time from its interior (by its own
// parametrization), half the time the projection of a far point (boundary).
Vector RandomFeasible(const ConstraintSet& set, int d, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::exponential_distribution<double> e(1.0);
  if (u(rng) < 0.5) {
    Vector z = Gaussian(d, rng, 4.0);
    set.Project(&z);
    return z;
  }
  const Vector c = set.center.size() != 0 ? set.center : Vector::Zero(d);
  switch (set.kind) {
    case ConstraintSet::Kind::kBall: {
      Vector dir = Gaussian(d, rng);
      return c + set.radius * std::pow(u(rng), 1.0 / d) / dir.norm() * dir;
    }
    case ConstraintSet::Kind::kL1Ball:
    case ConstraintSet::Kind::kSimplex: {
      Vector w(d);
      for (int i = 0; i < d; ++i) w[i] = e(rng);
      if (set.kind == ConstraintSet::Kind::kSimplex) return set.radius / w.sum() * w;
      const double t = u(rng) * set.radius / (w.sum() + e(rng));
      for (int i = 0; i < d; ++i) w[i] *= u(rng) < 0.5 ? -t : t;
      return c + w;
    }
    case ConstraintSet::Kind::kBox: {
      Vector z(d);
      for (int i = 0; i < d; ++i) {
        const double lo = set.LowerBound(i);
        const double hi = set.hi.size() == 1 ? set.hi[0] : set.hi[i];
        if (std::isfinite(lo) && std::isfinite(hi)) {
          z[i] = lo + u(rng) * (hi - lo);
        } else if (std::isfinite(lo)) {
          z[i] = lo + 3.0 * e(rng);
        } else {
          z[i] = hi - 3.0 * e(rng);
        }
      }
      return z;
    }
    case ConstraintSet::Kind::kNone:
      return Gaussian(d, rng, 3.0);
  }
  return Vector();
}

// The vertices of a polytope (l1 ball, simplex, box up to 2^10 of them).
std::vector<Vector> Vertices(const ConstraintSet& set, int d) {
  std::vector<Vector> v;
  const Vector c = set.center.size() != 0 ? set.center : Vector::Zero(d);
  if (set.kind == ConstraintSet::Kind::kL1Ball) {
    for (int i = 0; i < d; ++i) {
      for (double s : {1.0, -1.0}) {
        Vector p = c;
        p[i] += s * set.radius;
        v.push_back(p);
      }
    }
  } else if (set.kind == ConstraintSet::Kind::kSimplex) {
    for (int i = 0; i < d; ++i) v.push_back(set.radius * Vector::Unit(d, i));
  } else if (set.kind == ConstraintSet::Kind::kBox && d <= 10) {
    for (int mask = 0; mask < (1 << d); ++mask) {
      Vector p(d);
      for (int i = 0; i < d; ++i) {
        p[i] = (mask >> i) & 1 ? (set.hi.size() == 1 ? set.hi[0] : set.hi[i]) : set.LowerBound(i);
      }
      v.push_back(p);
    }
  }
  return v;
}

constexpr int kDims[] = {1, 2, 3, 7, 20};

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
  ASSERT_TRUE(ConstraintSet::None().ProjectOntoCut((Vector(2) << 1.0, 1.0).finished(), 2.0, &z).ok());
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
