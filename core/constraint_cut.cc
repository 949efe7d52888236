// ConstraintSet::ProjectOntoCut: the Euclidean projection onto
// Z ∩ {z : <a, z> <= b}, AGM-BiO's cutting-plane set X_k (Cao, Jiang,
// Hamedani, Mokhtari, Alg. 1 and Eq. (7)).  The method and its choices are
// documented in core/constraint.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/constraint.h"

namespace f2obo {
namespace {

// Relative slack for "the set only touches the hyperplane" (rounding).
constexpr double kTouchTol = 1e-12;
// Doubling steps (2^1100 > DBL_MAX / DBL_MIN: mu reaches +inf first) and
// bracketed steps (the bracket halves at least every third step, and a
// 1e-13 relative width needs at most 44 halvings from [mu, 2 mu]).
constexpr int kMaxDoublings = 1100;
constexpr int kMaxBracketed = 300;
constexpr double kRelWidth = 1e-13;
// phi(mu) - b evaluated within this many ulps of its terms counts as 0.
constexpr double kRoundingUlps = 32.0;
constexpr double kEps = std::numeric_limits<double>::epsilon();

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

// The threshold tau of the projection of y (n entries; |y_i| when
// `magnitudes`) onto {u >= 0, sum u = total}, u_i = max(y_i - tau, 0), in
// expected O(n) without sorting: Condat's algorithm (L. Condat, "Fast
// projection onto the simplex and the l1 ball", Math. Program. 158, 2016,
// Sec. 3, the "proposed algorithm"): one pass keeps a candidate set v and its
// running threshold rho, a second pass re-admits the candidates it dropped,
// and passes over v remove entries <= rho until none is removed.  The active
// set v it ends with is that of the sort (Duchi et al.) up to rounding; tau is
// then recomputed as (sum v - total)/|v| in one sum.  With `sorted_sum` v is
// sorted decreasingly and tau is computed by SimplexThreshold's own loop, so
// that the result is bit-equal to ConstraintSet::Project (used at mu = 0,
// where the cut may be inactive and the answer must be P_Z(x) itself); the
// sort is of |v| entries, not n.  `v` and `dropped` are scratch.  Requires
// finite entries, n >= 1, total > 0.
double LinearThreshold(const double* y, Eigen::Index n, double total, bool magnitudes,
                       bool sorted_sum, std::vector<double>* v, std::vector<double>* dropped) {
  auto at = [&](Eigen::Index i) { return magnitudes ? std::abs(y[i]) : y[i]; };
  v->clear();
  dropped->clear();
  v->push_back(at(0));
  double rho = at(0) - total;
  for (Eigen::Index i = 1; i < n; ++i) {
    const double yi = at(i);
    if (!(yi > rho)) continue;
    rho += (yi - rho) / static_cast<double>(v->size() + 1);
    if (rho > yi - total) {
      v->push_back(yi);
    } else {
      dropped->insert(dropped->end(), v->begin(), v->end());
      v->assign(1, yi);
      rho = yi - total;
    }
  }
  for (double yi : *dropped) {
    if (yi > rho) {
      v->push_back(yi);
      rho += (yi - rho) / static_cast<double>(v->size());
    }
  }
  for (size_t before = 0; before != v->size();) {
    before = v->size();
    size_t kept = before;
    size_t out = 0;
    for (size_t j = 0; j < before; ++j) {
      const double yj = (*v)[j];
      if (yj > rho) {
        (*v)[out++] = yj;
      } else if (kept > 1) {
        --kept;
        rho += (rho - yj) / static_cast<double>(kept);
      }
    }
    v->resize(std::max<size_t>(out, 1));
  }
  if (sorted_sum) {
    std::sort(v->begin(), v->end(), std::greater<double>());
    double cumulative = 0.0, tau = (*v)[0] - total;
    for (size_t j = 0; j < v->size(); ++j) {
      cumulative += (*v)[j];
      const double candidate = (cumulative - total) / static_cast<double>(j + 1);
      if (!((*v)[j] - candidate > 0.0)) break;
      tau = candidate;
    }
    return tau;
  }
  double sum = 0.0;
  for (double yj : *v) sum += yj;
  return (sum - total) / static_cast<double>(v->size());
}

// phi(mu) = <a, P_Z(x0 - mu a)> for the polyhedral sets, with the slope of
// the linear piece of phi to the right of mu (phi is piecewise linear: P_Z
// is affine on each piece of its active set).  On a piece, with S the free
// coordinates:
//  * box: z_S = w_S = x0_S - mu a_S, the others at their bound:
//    phi' = -sum_S a_i^2;
//  * simplex: z_S = w_S - tau with sum_S z = total, so
//    dtau/dmu = -sum_S a_i / |S| and phi' = -sum_S a_i^2 + (sum_S a_i)^2/|S|;
//  * l1 ball outside the ball: z_S = w_S - tau s_S (s the signs), with
//    sum_S |z_i| = r: phi' = -sum_S a_i^2 + (sum_S s_i a_i)^2/|S|; inside the
//    ball z = w and phi' = -||a||^2.
// Each evaluation is O(d) (LinearThreshold, no sort) and allocation-free
// after the first (the buffers live as long as one ProjectOntoCut).
class CutPieces {
 public:
  CutPieces(const ConstraintSet& set, const Vector& x0, const Vector& a, double b)
      : set_(set), a_(a), b_(b) {
    centered_ = set.kind == ConstraintSet::Kind::kL1Ball && set.center.size() != 0;
    base_ = centered_ ? Vector(x0 - set.center) : x0;
  }

  // z = P_Z(x0 - mu a); returns <a, z> - b and sets *slope.  At mu = 0, z is
  // bit-equal to ConstraintSet::Project(x0).  NaN if x0 is not finite (l1
  // ball, simplex), as Project.
  double Eval(double mu, Vector* z, double* slope) {
    const Eigen::Index n = a_.size();
    if (mu == 0.0) {
      *z = base_;
    } else {
      z->noalias() = base_ - mu * a_;
    }
    double s2 = 0.0, s1 = 0.0;
    Eigen::Index count = 0;
    switch (set_.kind) {
      case ConstraintSet::Kind::kBox:
        for (Eigen::Index i = 0; i < n; ++i) {
          const double lo = set_.LowerBound(static_cast<int>(i));
          const double hi = set_.hi.size() == 1 ? set_.hi[0] : set_.hi[i];
          const double w = (*z)[i], ai = a_[i];
          // Free on the right of mu: strictly inside, or on a bound it leaves.
          if ((w < hi || (w == hi && ai > 0.0)) && (w > lo || (w == lo && ai < 0.0))) s2 += ai * ai;
          (*z)[i] = std::min(std::max(w, lo), hi);
        }
        *slope = -s2;
        break;
      case ConstraintSet::Kind::kSimplex: {
        if (!z->allFinite()) {
          z->setConstant(std::numeric_limits<double>::quiet_NaN());
          *slope = 0.0;
          return std::numeric_limits<double>::quiet_NaN();
        }
        const double tau = LinearThreshold(z->data(), n, set_.radius, /*magnitudes=*/false,
                                           /*sorted_sum=*/mu == 0.0, &v_, &dropped_);
        for (Eigen::Index i = 0; i < n; ++i) {
          const double w = (*z)[i];
          if (w > tau) {
            s2 += a_[i] * a_[i];
            s1 += a_[i];
            ++count;
          }
          (*z)[i] = std::max(w - tau, 0.0);
        }
        *slope = count > 0 ? -s2 + s1 * s1 / static_cast<double>(count) : 0.0;
        break;
      }
      case ConstraintSet::Kind::kL1Ball: {
        const double norm1 = z->lpNorm<1>();
        if (!std::isfinite(norm1)) {
          z->setConstant(std::numeric_limits<double>::quiet_NaN());
          *slope = 0.0;
          return std::numeric_limits<double>::quiet_NaN();
        }
        if (!(norm1 > set_.radius)) {
          *slope = -a_.squaredNorm();
          break;
        }
        const double tau = LinearThreshold(z->data(), n, set_.radius, /*magnitudes=*/true,
                                           /*sorted_sum=*/mu == 0.0, &v_, &dropped_);
        for (Eigen::Index i = 0; i < n; ++i) {
          const double w = (*z)[i];
          const double m = std::max(std::abs(w) - tau, 0.0);
          if (std::abs(w) > tau) {
            s2 += a_[i] * a_[i];
            s1 += w < 0.0 ? -a_[i] : a_[i];
            ++count;
          }
          (*z)[i] = w < 0.0 ? -m : m;
        }
        *slope = count > 0 ? -s2 + s1 * s1 / static_cast<double>(count) : 0.0;
        break;
      }
      case ConstraintSet::Kind::kNone:
      case ConstraintSet::Kind::kBall:
        break;  // closed forms elsewhere
    }
    if (centered_) *z += set_.center;
    return a_.dot(*z) - b_;
  }

 private:
  const ConstraintSet& set_;
  const Vector& a_;
  const double b_;
  bool centered_ = false;
  Vector base_;
  std::vector<double> v_, dropped_;
};

// The 1-D search of core/constraint.h for the polyhedral sets: a root of the
// non-increasing piecewise-linear f(mu) = phi(mu) - b by Newton steps on the
// exact slope of the current piece (one step from a point of the root's piece
// lands on the root), safeguarded by a bracket [lo, hi] with f(lo) > 0 >=
// f(hi): a step that leaves the bracket, a flat piece, or two steps that did
// not halve the bracket are replaced by doubling (no hi yet) or bisection.
// `m` is MinLinear(a) (<= b + slack here).
absl::Status CutSearch(const ConstraintSet& set, const Vector& a, double b, double m, Vector* x) {
  const Vector x0 = *x;
  CutPieces pieces(set, x0, a, b);
  Vector z(x0.size()), trial(x0.size());
  double slope = 0.0;
  const double f0 = pieces.Eval(0.0, &z, &slope);
  if (!(f0 > 0.0)) {
    if (std::isnan(f0)) return absl::InvalidArgumentError("cutting plane: x is not finite");
    *x = std::move(z);
    return absl::OkStatus();
  }
  // "Within rounding" of b for the point w (the terms of <a, w> - b).
  auto slack = [&](const Vector& w) {
    return kTouchTol * (std::abs(b) + a.cwiseAbs().dot(w.cwiseAbs()));
  };
  // phi(mu) >= phi(0) - mu ||a||^2, so the root is at least f0/||a||^2.
  const double aa = a.squaredNorm();
  const double floor = std::max(f0 / aa, std::numeric_limits<double>::min());
  // Done at a point with f <= 0 when the root is within a relative kRelWidth
  // of mu (on the root's piece; the old bracket's precision), or f is at the
  // level of the rounding of evaluating phi (the terms of <a, x0 - mu a>,
  // and b): a closer mu cannot be told apart.
  const double terms = std::abs(b) + a.cwiseAbs().dot(x0.cwiseAbs());
  auto tolerance = [&](double at, double s) {
    return std::max(kRelWidth * at * std::max(-s, 0.0), kRoundingUlps * kEps * (terms + at * aa));
  };
  double lo = 0.0, hi = std::numeric_limits<double>::infinity();
  double mu = 0.0, f = f0;
  double f_lo = f0, slope_lo = slope, f_hi = 0.0, push = 1.0;
  bool have_hi = false;
  double width = std::numeric_limits<double>::infinity();
  int stalled = 0, doublings = 0;
  for (int k = 0; k < kMaxBracketed + kMaxDoublings; ++k) {
    double next = slope < 0.0 ? mu - f / slope : std::numeric_limits<double>::quiet_NaN();
    const bool lo_at_root = slope_lo < 0.0 && f_lo <= tolerance(lo, slope_lo);
    if (!(next > lo && next < hi) || stalled >= 2 || (lo_at_root && mu == lo)) {
      if (lo_at_root) {
        // lo is just above b (up to the tolerance), so the root is at lo up
        // to rounding: step past it by twice the Newton step (at least a
        // few ulps), growing 4x each time phi does not drop below b.
        next = lo + push * std::max(-2.0 * f_lo / slope_lo, 4.0 * kEps * lo);
        push *= 4.0;
        if (!(next < hi)) next = 0.5 * (lo + hi);
      } else if (have_hi) {
        // False position; bisection when two steps did not halve the bracket.
        next = stalled >= 2 ? 0.5 * (lo + hi) : lo + f_lo * (hi - lo) / (f_lo - f_hi);
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
      } else {
        next = std::max(2.0 * lo, floor);
        if (++doublings > kMaxDoublings || !std::isfinite(next)) break;
      }
    }
    mu = next;
    f = pieces.Eval(mu, &trial, &slope);
    if (std::isnan(f)) return absl::InvalidArgumentError("cutting plane: x is not finite");
    if (f <= 0.0) {
      hi = mu;
      f_hi = f;
      have_hi = true;
      z.swap(trial);
      if (-f <= tolerance(mu, slope)) break;
    } else {
      lo = mu;
      f_lo = f;
      slope_lo = slope;
      // A flat piece just above b (rounding), or phi flat at m from here on
      // (the set touches the hyperplane): accept the point if it is within
      // rounding of b, else the set is empty.
      if (!have_hi && !(slope < 0.0) &&
          (f <= tolerance(mu, slope) || f <= (m - b) + slack(trial))) {
        if (f <= std::max(tolerance(mu, slope), slack(trial))) {
          *x = std::move(trial);
          return absl::OkStatus();
        }
        return Empty(m, b);
      }
    }
    if (have_hi) {
      if (hi - lo <= kRelWidth * hi) break;
      if (hi - lo <= 0.5 * width) {
        width = hi - lo;
        stalled = 0;
      } else {
        ++stalled;
      }
    }
  }
  if (!have_hi) {
    // phi never reached b: accept the point reached within rounding.
    if (f > 0.0 && f <= slack(trial)) {
      *x = std::move(trial);
      return absl::OkStatus();
    }
    return Empty(m, b);
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
