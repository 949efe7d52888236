// ConstraintSet::ProjectOntoCut: the Euclidean projection onto
// Z ∩ {z : <a, z> <= b}, AGM-BiO's cutting-plane set X_k (Cao, Jiang,
// Hamedani, Mokhtari, Alg. 1 and Eq. (7)).  The method and its choices are
// documented in core/constraint.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/constraint.h"

namespace f2obo {
namespace {

// Relative slack for "the set only touches the hyperplane" (rounding).
constexpr double kTouchTol = 1e-12;
// Doubling steps (2^1100 > DBL_MAX / DBL_MIN: mu reaches +inf first) and
// Illinois iterations (the bracket halves at least every third step, and a
// 1e-13 relative width needs at most 44 halvings from [mu, 2 mu]).
constexpr int kMaxDoublings = 1100;
constexpr int kMaxIllinois = 300;
constexpr double kRelWidth = 1e-13;

absl::Status Empty(double m, double b) {
  return absl::FailedPreconditionError(absl::StrCat(
      "cutting plane: Z ∩ {<a,z> <= b} is empty (min <a,z> over Z = ", m, ", b = ", b, ")"));
}

// Closed form on the l2 ball ||z - c|| <= r, in coordinates v = z - c and
// the shifted level bp = b - <a, c>:
//  1. P_ball(v) if it satisfies <a, .> <= bp;
//  2. else the halfspace projection h = v - (<a,v> - bp)_+ / ||a||^2 a if
//     ||h|| <= r;
//  3. else both constraints are active (KKT: with one inactive the answer
//     would be the other set's projection, cases 1 and 2), so the answer is
//     the nearest point of the sphere {||v|| = r} ∩ {<a,v> = bp}: centre
//     p0 = bp/||a||^2 a, radius rho = sqrt(r^2 - bp^2/||a||^2), reached along
//     the part u of v orthogonal to a: p0 + rho u/||u|| (any such point if
//     u = 0; in one dimension the sphere is the point p0).
void CutBall(const ConstraintSet& set, const Vector& a, double b, Vector* x) {
  const bool centered = set.center.size() != 0;
  const double r = set.radius;
  const double aa = a.squaredNorm();
  Vector v = centered ? Vector(*x - set.center) : *x;
  const double bp = centered ? b - a.dot(set.center) : b;
  const double norm = v.norm();
  const double av = a.dot(v);
  if (norm <= r ? av <= bp : (r / norm) * av <= bp) {
    if (norm > r) v *= r / norm;
  } else {
    const double excess = std::max(av - bp, 0.0);
    Vector h = v - (excess / aa) * a;
    if (h.norm() <= r) {
      v = std::move(h);
    } else {
      const double rho = std::sqrt(std::max(r * r - bp * bp / aa, 0.0));
      Vector u = v - (av / aa) * a;
      double un = u.norm();
      if (!(un > 0.0) && a.size() > 1) {
        // v is parallel to a: every point of the sphere is nearest; take the
        // direction of the coordinate where a is smallest, made orthogonal.
        Eigen::Index j = 0;
        a.cwiseAbs().minCoeff(&j);
        u = -(a[j] / aa) * a;
        u[j] += 1.0;
        un = u.norm();
      }
      v = (bp / aa) * a;
      if (un > 0.0 && a.size() > 1) v += (rho / un) * u;
    }
  }
  *x = centered ? Vector(v + set.center) : v;
}

// The 1-D search of core/constraint.h for the polyhedral sets.  `m` is
// MinLinear(a) (<= b + slack here).
absl::Status CutSearch(const ConstraintSet& set, const Vector& a, double b, double m, Vector* x) {
  const Vector x0 = *x;
  Vector z = x0;
  set.Project(&z);
  const double f0 = a.dot(z) - b;
  if (!(f0 > 0.0)) {
    if (std::isnan(f0)) return absl::InvalidArgumentError("cutting plane: x is not finite");
    *x = std::move(z);
    return absl::OkStatus();
  }
  auto f = [&](double mu, Vector* out) {
    out->noalias() = x0 - mu * a;
    set.Project(out);
    return a.dot(*out) - b;
  };
  // Bracket [lo, hi] with f(lo) >= 0 >= f(hi); mu0 = f0/||a||^2 is a valid lo.
  double lo = std::max(f0 / a.squaredNorm(), std::numeric_limits<double>::min());
  double flo = f(lo, &z);
  if (flo <= 0.0) {
    *x = std::move(z);
    return absl::OkStatus();
  }
  // The doubling stops early once phi reaches min_Z <a, z> = m (up to
  // rounding): the iterate is then on the minimizing face, and doubling on
  // would only lose x's digits in x - mu a (the set touches the hyperplane).
  auto slack = [&] { return kTouchTol * (std::abs(b) + a.cwiseAbs().dot(z.cwiseAbs())); };
  double hi = lo, fhi = flo;
  for (int k = 0; k < kMaxDoublings && fhi > 0.0; ++k) {
    lo = hi;
    flo = fhi;
    hi = 2.0 * lo;
    if (!std::isfinite(hi)) break;
    fhi = f(hi, &z);
    if (fhi > 0.0 && fhi <= (m - b) + slack()) break;
  }
  if (!(fhi <= 0.0)) {
    // phi never reached b: accept the point reached if the set touches the
    // hyperplane up to rounding, else the set is empty.
    if (std::isfinite(hi) && fhi <= slack()) {
      *x = std::move(z);
      return absl::OkStatus();
    }
    return Empty(m, b);
  }
  // Illinois: regula falsi on the bracket, halving the retained end's value
  // when the same end is kept twice (superlinear, keeps the bracket).
  // A bisection step is forced whenever two steps have not halved the
  // bracket (a kink of phi can stall regula falsi), so the bracket halves at
  // least every third step.
  Vector trial(x0.size());
  int kept = 0;  // -1: lo kept last time, +1: hi kept
  double width = hi - lo;
  int stalled = 0;
  for (int k = 0; k < kMaxIllinois && fhi < 0.0 && hi - lo > kRelWidth * hi; ++k) {
    double mu = stalled >= 2 ? 0.5 * (lo + hi) : hi - fhi * (hi - lo) / (fhi - flo);
    if (!(mu > lo && mu < hi)) mu = 0.5 * (lo + hi);
    const double fm = f(mu, &trial);
    if (fm <= 0.0) {
      hi = mu;
      fhi = fm;
      z.swap(trial);
      if (kept == -1) flo *= 0.5;
      kept = -1;
    } else {
      lo = mu;
      flo = fm;
      if (kept == 1) fhi *= 0.5;
      kept = 1;
    }
    if (hi - lo <= 0.5 * width) {
      width = hi - lo;
      stalled = 0;
    } else {
      ++stalled;
    }
  }
  *x = std::move(z);
  return absl::OkStatus();
}

}  // namespace

absl::Status ConstraintSet::ProjectOntoCut(const VecIn& a, double b, Vector* x) const {
  if (a.size() != x->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cutting plane: a has ", a.size(), " entries, x has ", x->size()));
  }
  if (!a.allFinite() || !std::isfinite(b)) {
    return absl::InvalidArgumentError("cutting plane: a or b is not finite");
  }
  const double scale = a.size() == 0 ? 0.0 : a.lpNorm<Eigen::Infinity>();
  if (scale == 0.0) {
    if (b < 0.0) return Empty(0.0, b);
    Project(x);
    return absl::OkStatus();
  }
  const Vector an = a / scale;
  const double bn = b / scale;
  const double m = MinLinear(an);
  if (m > bn + kTouchTol * (std::abs(bn) + std::abs(m))) return Empty(m * scale, b);
  switch (kind) {
    case Kind::kNone: {
      const double excess = an.dot(*x) - bn;
      if (excess > 0.0) *x -= (excess / an.squaredNorm()) * an;
      return absl::OkStatus();
    }
    case Kind::kBall:
      CutBall(*this, an, bn, x);
      return absl::OkStatus();
    case Kind::kBox:
    case Kind::kL1Ball:
    case Kind::kSimplex:
      break;
  }
  const absl::Status s = CutSearch(*this, an, bn, m, x);
  if (!s.ok() && absl::IsFailedPrecondition(s)) return Empty(m * scale, b);
  return s;
}

}  // namespace f2obo
