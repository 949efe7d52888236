#include "core/constraint.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

double BoundAt(const Vector& b, int i) { return b.size() == 1 ? b[0] : b[i]; }

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

absl::Status ConstraintSet::Validate(int x_dim) const {
  switch (kind) {
    case Kind::kNone:
      return absl::OkStatus();
    case Kind::kBox: {
      for (const auto* b : {&lo, &hi}) {
        if (b->size() != 1 && b->size() != x_dim) {
          return absl::InvalidArgumentError(absl::StrCat(
              "constraint.box: ", b == &lo ? "lo" : "hi", " has ", b->size(),
              " entries, expected 1 or x_dim = ", x_dim));
        }
        for (Eigen::Index i = 0; i < b->size(); ++i) {
          if (std::isnan((*b)[i])) {
            return absl::InvalidArgumentError(
                absl::StrCat("constraint.box: bound ", i, " is NaN"));
          }
        }
      }
      for (int i = 0; i < x_dim; ++i) {
        if (BoundAt(lo, i) > BoundAt(hi, i)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "constraint.box: lo > hi at coordinate ", i));
        }
      }
      return absl::OkStatus();
    }
    case Kind::kBall:
      if (!(radius > 0.0) || !std::isfinite(radius)) {
        return absl::InvalidArgumentError(
            "constraint.ball.radius: must be finite and > 0");
      }
      if (center.size() != 0 && center.size() != x_dim) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constraint.ball.center: has ", center.size(),
            " entries, expected 0 or x_dim = ", x_dim));
      }
      if (!center.allFinite()) {
        return absl::InvalidArgumentError(
            "constraint.ball.center: not finite");
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("constraint: unknown kind");
}

double ConstraintSet::LowerBound(int i) const {
  return kind == Kind::kBox ? BoundAt(lo, i)
                            : -std::numeric_limits<double>::infinity();
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
  }
}

bool ConstraintSet::Contains(const VecIn& x, double tol) const {
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
      return (center.size() != 0 ? (x - center).norm() : x.norm()) <=
             radius + tol;
  }
  return false;
}

void GradientMapping(const ConstraintSet& set, const VecIn& x, const VecIn& g,
                     double gamma, Vector* out) {
  out->noalias() = x - gamma * g;
  set.Project(out);
  *out = (x - *out) / gamma;
}

}  // namespace f2obo
