#include "tests/core/constraint_sets.h"

#include <gtest/gtest.h>

#include <cmath>

namespace f2obo::testing {

Vector Gaussian(int d, std::mt19937_64& rng, double scale) {
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

}  // namespace f2obo::testing
