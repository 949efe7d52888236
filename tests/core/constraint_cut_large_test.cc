// ConstraintSet::ProjectOntoCut at large d (the polyhedral sets' Newton
// search on phi's pieces, with the sort-free threshold), against an
// independent solve: bisection on the multiplier mu with the sort-based
// ConstraintSet::Project, 200 halvings; and the edge cases where the answer
// is known exactly (inside both sets, the cut inactive, ties, a sparse a).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/constraint.h"
#include "tests/core/constraint_sets.h"

namespace f2obo {
namespace {

using testing::Gaussian;

// mu with <a, P_Z(x - mu a)> = b by bisection (phi is non-increasing), and
// the point at the bracket's upper end.  Requires the cut to be active.
Vector BisectionReference(const ConstraintSet& set, const Vector& a, double b, const Vector& x) {
  auto phi = [&](double mu) {
    Vector z = x - mu * a;
    set.Project(&z);
    return a.dot(z);
  };
  double lo = 0.0, hi = 1.0;
  while (phi(hi) > b) hi *= 2.0;
  for (int k = 0; k < 200 && hi - lo > 1e-16 * hi; ++k) {
    const double mid = 0.5 * (lo + hi);
    (phi(mid) > b ? lo : hi) = mid;
  }
  Vector z = x - hi * a;
  set.Project(&z);
  return z;
}

struct Case {
  std::string name;
  ConstraintSet set;
};

std::vector<Case> LargeSets(int d, std::mt19937_64& rng) {
  ConstraintSet centered = ConstraintSet::L1Ball(3.0);
  centered.center = Gaussian(d, rng, 0.01);
  ConstraintSet box = ConstraintSet::Box(-0.05, 0.1);
  return {{"l1", ConstraintSet::L1Ball(10.0)},
          {"l1_small", ConstraintSet::L1Ball(0.5)},
          {"l1_centered", centered},
          {"simplex", ConstraintSet::Simplex(2.0)},
          {"box", box}};
}

TEST(ConstraintCutLarge, MatchesBisectionOnTheMultiplier) {
  std::mt19937_64 rng(28);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int active = 0;
  for (int d : {50, 1000, 5000}) {
    for (const Case& c : LargeSets(d, rng)) {
      for (int trial = 0; trial < 4; ++trial) {
        Vector a = Gaussian(d, rng);
        if (trial == 3) {  // a sparse a, as grad g of sparse rows
          for (int i = 0; i < d; ++i) a[i] = u(rng) < 0.95 ? 0.0 : a[i];
          a[0] = 1.0;
        }
        const Vector x = Gaussian(d, rng, trial % 2 == 0 ? 0.1 : 1.0);
        Vector plain = x;
        c.set.Project(&plain);
        // b between min_Z <a, z> and <a, P_Z(x)>: the cut binds.
        const double m = c.set.MinLinear(a), top = a.dot(plain);
        const double b = m + (0.2 + 0.6 * u(rng)) * (top - m);
        Vector z = x;
        ASSERT_TRUE(c.set.ProjectOntoCut(a, b, &z).ok()) << c.name;
        ++active;
        const Vector ref = BisectionReference(c.set, a, b, x);
        const double scale = 1.0 + x.norm();
        EXPECT_LE((z - ref).norm(), 1e-9 * scale) << c.name << " d=" << d << " trial " << trial;
        EXPECT_TRUE(c.set.Contains(z, 1e-10)) << c.name << " d=" << d;
        // <a, z> <= b holds as evaluated on the scaled cut (a / ||a||_inf).
        const double terms = std::abs(b) + a.cwiseAbs().dot(z.cwiseAbs());
        EXPECT_LE(a.dot(z), b + 1e-14 * terms) << c.name << " d=" << d;
        EXPECT_NEAR(a.dot(z), b, 1e-10 * terms) << c.name << " d=" << d;
        // Optimality: x - z is in the normal cone, so <x - z, w - z> <= 0 for
        // w in the intersection: P_Z of points pulled onto the cut.
        for (int k = 0; k < 3; ++k) {
          Vector w = Gaussian(d, rng);
          c.set.Project(&w);
          const double aw = a.dot(w);
          if (aw > b) w += std::min(1.0, (aw - b) / (aw - a.dot(z))) * (z - w);
          EXPECT_LE((x - z).dot(w - z), 1e-9 * scale * (1.0 + (w - z).norm())) << c.name;
        }
      }
    }
  }
  EXPECT_EQ(active, 3 * 5 * 4);
}

TEST(ConstraintCutLarge, InactiveCutIsThePlainProjectionBitForBit) {
  std::mt19937_64 rng(29);
  for (int d : {1, 7, 1000, 100000}) {
    for (const Case& c : LargeSets(d, rng)) {
      const Vector a = Gaussian(d, rng);
      const Vector x = Gaussian(d, rng);
      Vector plain = x;
      c.set.Project(&plain);
      Vector z = x;
      ASSERT_TRUE(c.set.ProjectOntoCut(a, a.dot(plain) + 1.0, &z).ok()) << c.name;
      EXPECT_TRUE(z == plain) << c.name << " d=" << d;
      // On the hyperplane (up to the rounding of the cut's scaling by
      // 1/||a||_inf): the plain projection up to rounding.
      z = x;
      ASSERT_TRUE(c.set.ProjectOntoCut(a, a.dot(plain), &z).ok()) << c.name;
      EXPECT_LE((z - plain).norm(), 1e-12 * (1.0 + plain.norm())) << c.name << " d=" << d;
    }
  }
}

TEST(ConstraintCutLarge, EdgeCases) {
  const int d = 1000;
  std::mt19937_64 rng(30);
  const ConstraintSet l1 = ConstraintSet::L1Ball(1.0);
  // Inside both sets: unchanged.
  const Vector a = Gaussian(d, rng);
  Vector x = Gaussian(d, rng);
  x *= 0.5 / x.lpNorm<1>();
  Vector z = x;
  ASSERT_TRUE(l1.ProjectOntoCut(a, a.dot(x) + 0.1, &z).ok());
  EXPECT_TRUE(z == x);
  // Inside the ball, outside the halfspace, its projection inside the ball:
  // the halfspace's closed form.
  const double b = a.dot(x) - 1e-3;
  z = x;
  ASSERT_TRUE(l1.ProjectOntoCut(a, b, &z).ok());
  const Vector h = x - (1e-3 / a.squaredNorm()) * a;
  ASSERT_LT(h.lpNorm<1>(), 1.0);
  EXPECT_LE((z - h).norm(), 1e-13);
  // On the ball's boundary, the cut through it: unchanged up to rounding.
  Vector on = Gaussian(d, rng);
  on /= on.lpNorm<1>();
  z = on;
  ASSERT_TRUE(l1.ProjectOntoCut(a, a.dot(on), &z).ok());
  EXPECT_LE((z - on).norm(), 1e-14);
  // Ties: every |x_i| equal, a = e_0 + e_1, b below <a, P(x)>.
  Vector tied = Vector::Constant(d, 0.01);
  for (int i = 1; i < d; i += 2) tied[i] = -0.01;
  Vector pair = Vector::Zero(d);
  pair[0] = pair[2] = 1.0;
  z = tied;
  ASSERT_TRUE(l1.ProjectOntoCut(pair, -0.5, &z).ok());
  const Vector ref = BisectionReference(l1, pair, -0.5, tied);
  EXPECT_LE((z - ref).norm(), 1e-9);
  EXPECT_NEAR(pair.dot(z), -0.5, 1e-12);
  EXPECT_LE(pair.dot(z), -0.5);  // ||pair||_inf = 1: no rounding in the scaling
  // The set touching the hyperplane: the vertex -e_0 of the ball.
  z = tied;
  ASSERT_TRUE(l1.ProjectOntoCut(Vector::Unit(d, 0), -1.0, &z).ok());
  EXPECT_LE((z + Vector::Unit(d, 0)).norm(), 1e-9);
  // Just beyond it: empty.
  z = tied;
  EXPECT_EQ(l1.ProjectOntoCut(Vector::Unit(d, 0), -1.001, &z).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace f2obo
