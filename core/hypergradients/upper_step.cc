#include "core/hypergradients/upper_step.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/hypergradients/first_order.h"

namespace f2obo {
namespace {

// r_eps as a fraction of a bounded coordinate's width: 10 doublings of r
// reach the whole width, and a step of at most 1e-3 of the box leaves the
// untuned start where it is to three digits.
constexpr double kWidthFraction = 1e-3;
// DoG's r_eps = 1e-6 (1 + |x_1|) (Ivgi et al., Sec. 3) where X is unbounded.
constexpr double kUnboundedFraction = 1e-6;

}  // namespace

Vector UpperStepWidths(const ConstraintSet& set, int x_dim) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Vector w = Vector::Constant(x_dim, kInf);
  switch (set.kind) {
    case ConstraintSet::Kind::kNone:
      break;
    case ConstraintSet::Kind::kBox:
      for (int i = 0; i < x_dim; ++i) {
        const double lo = set.lo.size() == 1 ? set.lo[0] : set.lo[i];
        const double hi = set.hi.size() == 1 ? set.hi[0] : set.hi[i];
        w[i] = hi - lo;  // inf when a bound is
      }
      break;
    case ConstraintSet::Kind::kBall:
    case ConstraintSet::Kind::kL1Ball:
      w.setConstant(2.0 * set.radius);
      break;
    case ConstraintSet::Kind::kSimplex:
      w.setConstant(set.radius);
      break;
  }
  return w;
}

UpperStep::UpperStep(const AlgorithmOptions& o, const ConstraintSet& set, int x_dim, size_t slot)
    : o_(o),
      set_(set),
      x_dim_(x_dim),
      slot_(slot),
      automatic_(GammaIsAuto(o)),
      widths_(UpperStepWidths(set, x_dim)) {}

void UpperStep::AppendLayout(std::vector<int>* sizes) const {
  if (automatic_) sizes->push_back(3 * x_dim_);
}

void UpperStep::EnsurePart(const Vector& x, StateParts* aux) const {
  while (aux->size() <= slot_) aux->push_back(Vector());
  if ((*aux)[slot_].size() == 3 * x_dim_) return;
  Vector part(3 * x_dim_);
  for (int i = 0; i < x_dim_; ++i) {
    const double w = widths_[i];
    // A zero width (a coordinate held fixed, lo = hi) never moves: any
    // positive r_eps will do.
    const double r_eps = std::isfinite(w) && w > 0.0 ? kWidthFraction * w
                                                     : kUnboundedFraction * (1.0 + std::abs(x[i]));
    part[i] = 0.0;             // G_i
    part[x_dim_ + i] = r_eps;  // r_i
    part[2 * x_dim_ + i] = x[i];
  }
  aux->Set(slot_, std::move(part));
}

double UpperStep::Step(const Vector& d, int64_t t, StateParts* aux, Vector* x) const {
  if (!automatic_) {
    const double gamma = UpperStepSize(o_, t);
    ProjectedStep(set_, gamma, d, x);
    return gamma;
  }
  EnsurePart(*x, aux);
  Vector& part = aux->Mutable(slot_);
  double reported = 0.0;
  for (int i = 0; i < x_dim_; ++i) {
    double& g2 = part[i];
    double& r = part[x_dim_ + i];
    const double x1 = part[2 * x_dim_ + i];
    g2 += d[i] * d[i];
    r = std::max(r, std::abs((*x)[i] - x1));
    if (g2 > 0.0) {
      const double step = r / std::sqrt(g2);
      (*x)[i] -= step * d[i];
      reported = std::max(reported, step);
    }
  }
  set_.Project(x);
  return reported;
}

}  // namespace f2obo
