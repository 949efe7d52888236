#include "core/constraint.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kEps = std::numeric_limits<double>::epsilon();

double BoundAt(const Vector& b, int i) { return b.size() == 1 ? b[0] : b[i]; }
double CenterAt(const Vector& c, Eigen::Index i) { return c.size() == 0 ? 0.0 : c[i]; }

// The threshold tau of the projection of v (n entries, v >= 0 for the l1
// ball's magnitudes, any sign for the simplex) onto {u >= 0, sum u = total}:
// u_i = max(v_i - tau, 0).  Sort-based (Duchi et al. 2008, Fig. 1): with w
// the entries in decreasing order, rho = max{j : w_j - (sum_{i<=j} w_i -
// total)/j > 0} (j = 1 always qualifies) and tau = (sum_{i<=rho} w_i -
// total)/rho.  The scratch buffer is per thread so that Project stays
// allocation-free once a thread has seen its largest d.  Requires finite v.
double SimplexThreshold(const double* v, Eigen::Index n, double total, bool magnitudes) {
  thread_local std::vector<double> scratch;
  scratch.resize(static_cast<size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) scratch[i] = magnitudes ? std::abs(v[i]) : v[i];
  std::sort(scratch.begin(), scratch.end(), std::greater<double>());
  double cumulative = 0.0, tau = scratch[0] - total;
  for (Eigen::Index j = 0; j < n; ++j) {
    cumulative += scratch[j];
    const double candidate = (cumulative - total) / static_cast<double>(j + 1);
    if (scratch[j] - candidate > 0.0) {
      tau = candidate;
    } else {
      // w is decreasing and the test fails from rho on (Duchi et al., Lemma 2).
      break;
    }
  }
  return tau;
}

void ProjectSimplex(double total, Vector* x) {
  if (x->size() == 0) return;
  if (!x->allFinite()) {
    x->setConstant(kNaN);
    return;
  }
  const double tau = SimplexThreshold(x->data(), x->size(), total, /*magnitudes=*/false);
  for (Eigen::Index i = 0; i < x->size(); ++i) (*x)[i] = std::max((*x)[i] - tau, 0.0);
}

void ProjectL1Ball(const Vector& center, double radius, Vector* x) {
  const bool centered = center.size() != 0;
  if (centered) *x -= center;
  const double norm1 = x->lpNorm<1>();
  if (!std::isfinite(norm1)) {
    x->setConstant(kNaN);
    return;
  }
  if (norm1 > radius) {
    // Project the magnitudes onto the simplex of total r, keep the signs.
    const double tau = SimplexThreshold(x->data(), x->size(), radius, /*magnitudes=*/true);
    for (Eigen::Index i = 0; i < x->size(); ++i) {
      const double v = (*x)[i];
      const double m = std::max(std::abs(v) - tau, 0.0);
      (*x)[i] = v < 0.0 ? -m : m;
    }
  }
  if (centered) *x += center;
}

// Lowest index of the entry with the largest |c_i| (largest -c_i when
// `signed_min`), the LMO's vertex.
// The bits of |v| as an unsigned integer: ordered as |v| for every v but NaN.
inline uint64_t AbsBits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits & ~(uint64_t{1} << 63);
}

Eigen::Index ArgBest(const VecIn& c, bool signed_min) {
  if (!signed_min && c.size() > 0) {
    // The first largest |c_i| in two passes the compiler vectorizes (the
    // largest bits, then the first entry that has them): the same index as
    // the scalar search below whenever c holds no NaN (an l1-ball LMO at
    // d = 100,000 was ~6% of an IR-SCG step).
    const double* v = c.data();
    const Eigen::Index n = c.size();
    uint64_t top = 0;
    for (Eigen::Index i = 0; i < n; ++i) {
      const uint64_t bits = AbsBits(v[i]);
      top = bits > top ? bits : top;
    }
    if (top <= AbsBits(kInf)) {
      for (Eigen::Index i = 0; i < n; ++i) {
        if (AbsBits(v[i]) == top) return i;
      }
    }
  }
  Eigen::Index best = 0;
  double best_value = signed_min ? -c[0] : std::abs(c[0]);
  for (Eigen::Index i = 1; i < c.size(); ++i) {
    const double v = signed_min ? -c[i] : std::abs(c[i]);
    if (v > best_value) {
      best_value = v;
      best = i;
    }
  }
  return best;
}

absl::Status CheckRadiusAndCenter(const char* field, double radius, const Vector& center,
                                  int x_dim) {
  if (!(radius > 0.0) || !std::isfinite(radius)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".radius: must be finite and > 0"));
  }
  if (center.size() != 0 && center.size() != x_dim) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".center: has ", center.size(),
                                                   " entries, expected 0 or x_dim = ", x_dim));
  }
  if (!center.allFinite()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".center: not finite"));
  }
  return absl::OkStatus();
}

}  // namespace

ConstraintSet ConstraintSet::Box(double lo, double hi) {
  ConstraintSet s;
  s.kind = Kind::kBox;
  s.lo = Vector::Constant(1, lo);
  s.hi = Vector::Constant(1, hi);
  return s;
}

ConstraintSet ConstraintSet::Ball(double radius) {
  ConstraintSet s;
  s.kind = Kind::kBall;
  s.radius = radius;
  return s;
}

ConstraintSet ConstraintSet::L1Ball(double radius) {
  ConstraintSet s;
  s.kind = Kind::kL1Ball;
  s.radius = radius;
  return s;
}

ConstraintSet ConstraintSet::Simplex(double total) {
  ConstraintSet s;
  s.kind = Kind::kSimplex;
  s.radius = total;
  return s;
}

absl::Status ConstraintSet::Validate(int x_dim) const {
  switch (kind) {
    case Kind::kNone:
      return absl::OkStatus();
    case Kind::kBox: {
      for (const auto* b : {&lo, &hi}) {
        if (b->size() != 1 && b->size() != x_dim) {
          return absl::InvalidArgumentError(
              absl::StrCat("constraint.box: ", b == &lo ? "lo" : "hi", " has ", b->size(),
                           " entries, expected 1 or x_dim = ", x_dim));
        }
        for (Eigen::Index i = 0; i < b->size(); ++i) {
          if (std::isnan((*b)[i])) {
            return absl::InvalidArgumentError(absl::StrCat("constraint.box: bound ", i, " is NaN"));
          }
        }
      }
      for (int i = 0; i < x_dim; ++i) {
        if (BoundAt(lo, i) > BoundAt(hi, i)) {
          return absl::InvalidArgumentError(
              absl::StrCat("constraint.box: lo > hi at coordinate ", i));
        }
      }
      return absl::OkStatus();
    }
    case Kind::kBall:
      return CheckRadiusAndCenter("constraint.ball", radius, center, x_dim);
    case Kind::kL1Ball:
      return CheckRadiusAndCenter("constraint.l1_ball", radius, center, x_dim);
    case Kind::kSimplex:
      if (!(radius > 0.0) || !std::isfinite(radius)) {
        return absl::InvalidArgumentError("constraint.simplex.total: must be finite and > 0");
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("constraint: unknown kind");
}

double ConstraintSet::LowerBound(int i) const {
  switch (kind) {
    case Kind::kBox:
      return BoundAt(lo, i);
    case Kind::kSimplex:
      return 0.0;
    case Kind::kL1Ball:
      return CenterAt(center, i) - radius;
    case Kind::kNone:
    case Kind::kBall:
      break;
  }
  return -kInf;
}

double ConstraintSet::MaxAbsCoordinate() const {
  const auto max_abs = [](const Vector& v) { return v.size() > 0 ? v.cwiseAbs().maxCoeff() : 0.0; };
  switch (kind) {
    case Kind::kBox:
      return std::max(max_abs(lo), max_abs(hi));
    case Kind::kBall:
    case Kind::kL1Ball:
      return radius + max_abs(center);
    case Kind::kSimplex:
      return radius;
    case Kind::kNone:
      break;
  }
  return kInf;
}

void ConstraintSet::Project(Vector* x) const {
  switch (kind) {
    case Kind::kNone:
      return;
    case Kind::kBox:
      for (Eigen::Index i = 0; i < x->size(); ++i) {
        (*x)[i] = std::min(std::max((*x)[i], BoundAt(lo, static_cast<int>(i))),
                           BoundAt(hi, static_cast<int>(i)));
      }
      return;
    case Kind::kBall: {
      const bool centered = center.size() != 0;
      const double norm = centered ? (*x - center).norm() : x->norm();
      if (norm <= radius) return;
      const double s = radius / norm;
      if (centered) {
        *x = center + s * (*x - center);
      } else {
        *x *= s;
      }
      return;
    }
    case Kind::kL1Ball:
      ProjectL1Ball(center, radius, x);
      return;
    case Kind::kSimplex:
      ProjectSimplex(radius, x);
      return;
  }
}

bool ConstraintSet::Contains(const VecIn& x, double tol) const {
  const double rounding = 2.0 * static_cast<double>(x.size()) * kEps * radius;
  switch (kind) {
    case Kind::kNone:
      return true;
    case Kind::kBox:
      for (Eigen::Index i = 0; i < x.size(); ++i) {
        if (x[i] < BoundAt(lo, static_cast<int>(i)) - tol ||
            x[i] > BoundAt(hi, static_cast<int>(i)) + tol) {
          return false;
        }
      }
      return true;
    case Kind::kBall:
      return (center.size() != 0 ? (x - center).norm() : x.norm()) <= radius + tol;
    case Kind::kL1Ball:
      return (center.size() != 0 ? (x - center).lpNorm<1>() : x.lpNorm<1>()) <=
             radius + tol + rounding;
    case Kind::kSimplex:
      return x.size() > 0 && x.minCoeff() >= -tol && std::abs(x.sum() - radius) <= tol + rounding;
  }
  return false;
}

bool ConstraintSet::HasLmo() const {
  switch (kind) {
    case Kind::kBall:
    case Kind::kL1Ball:
    case Kind::kSimplex:
      return true;
    case Kind::kBox:
      return lo.allFinite() && hi.allFinite();
    case Kind::kNone:
      break;
  }
  return false;
}

void ConstraintSet::Lmo(const VecIn& c, Vector* s) const {
  const Eigen::Index d = c.size();
  s->resize(d);
  if (!HasLmo() || d == 0) {
    s->setConstant(kNaN);
    return;
  }
  switch (kind) {
    case Kind::kBall: {
      double norm = c.norm();
      if (!std::isfinite(norm)) norm = c.stableNorm();  // overflow of the squares
      if (center.size() != 0) {
        *s = center;
      } else {
        s->setZero();
      }
      if (norm > 0.0) s->noalias() -= (radius / norm) * c;
      return;
    }
    case Kind::kL1Ball: {
      if (center.size() != 0) {
        *s = center;
      } else {
        s->setZero();
      }
      const Eigen::Index i = ArgBest(c, /*signed_min=*/false);
      if (c[i] > 0.0) (*s)[i] -= radius;
      if (c[i] < 0.0) (*s)[i] += radius;
      return;
    }
    case Kind::kSimplex:
      s->setZero();
      (*s)[ArgBest(c, /*signed_min=*/true)] = radius;
      return;
    case Kind::kBox:
      for (Eigen::Index i = 0; i < d; ++i) {
        (*s)[i] = c[i] < 0.0 ? BoundAt(hi, static_cast<int>(i)) : BoundAt(lo, static_cast<int>(i));
      }
      return;
    case Kind::kNone:
      return;
  }
}

double ConstraintSet::MinLinear(const VecIn& a) const {
  if (a.size() == 0 || (a.array() == 0.0).all()) return 0.0;
  switch (kind) {
    case Kind::kNone:
      return -kInf;
    case Kind::kBox: {
      double m = 0.0;
      for (Eigen::Index i = 0; i < a.size(); ++i) {
        if (a[i] > 0.0) m += a[i] * BoundAt(lo, static_cast<int>(i));
        if (a[i] < 0.0) m += a[i] * BoundAt(hi, static_cast<int>(i));
      }
      return m;
    }
    case Kind::kBall:
      return (center.size() != 0 ? a.dot(center) : 0.0) - radius * a.norm();
    case Kind::kL1Ball:
      return (center.size() != 0 ? a.dot(center) : 0.0) - radius * a.lpNorm<Eigen::Infinity>();
    case Kind::kSimplex:
      return radius * a.minCoeff();
  }
  return -kInf;
}

void GradientMapping(const ConstraintSet& set, const VecIn& x, const VecIn& g, double gamma,
                     Vector* out) {
  out->noalias() = x - gamma * g;
  set.Project(out);
  *out = (x - *out) / gamma;
}

}  // namespace f2obo
