#include "core/bilevel/hypergradients/upper_step.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/bilevel/hypergradients/first_order.h"

namespace f2obo {
namespace {

// eps as a fraction of a bounded coordinate's width: a first move of at most
// 1e-5 of the box (1% of eps), and ~10 doublings of the wealth reach the
// whole width.
constexpr double kWidthFraction = 1e-3;
// Where X is unbounded, DoG's r_eps = 1e-6 (1 + |x_1|) (Ivgi et al., Sec. 3):
// the same role, a first scale relative to the start.
constexpr double kUnboundedFraction = 1e-6;
// COCOB-Backprop's alpha (Orabona & Tommasi 2017, Alg. 2): the bet fraction
// is C / max(S + 1, 100) rather than KT's C / t.
constexpr double kFirstBets = 100.0;

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

double UpperStep::Epsilon(int i, double x1) const {
  const double w = widths_[i];
  // A zero width (a coordinate held fixed, lo = hi) never moves: any
  // positive eps will do.
  return std::isfinite(w) && w > 0.0 ? kWidthFraction * w
                                     : kUnboundedFraction * (1.0 + std::abs(x1));
}

void UpperStep::AppendLayout(std::vector<int>* sizes) const {
  if (automatic_) sizes->push_back(kUpperStepParts * x_dim_);
}

void UpperStep::EnsurePart(const Vector& x, StateParts* aux) const {
  while (aux->size() <= slot_) aux->push_back(Vector());
  if ((*aux)[slot_].size() == kUpperStepParts * x_dim_) return;
  Vector part = Vector::Zero(kUpperStepParts * x_dim_);  // L = S = C = 0
  for (int i = 0; i < x_dim_; ++i) {
    part[x_dim_ + i] = Epsilon(i, x[i]);  // W
    part[2 * x_dim_ + i] = x[i];          // x_1
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
  const int n = x_dim_;
  double reported = 0.0;
  for (int i = 0; i < n; ++i) {
    double& lmax = part[i];
    double& wealth = part[n + i];
    const double x1 = part[2 * n + i];
    double& s_abs = part[3 * n + i];
    double& c_sum = part[4 * n + i];
    // The bettor's point before this step: x_i unless the projection moved it.
    const double w = x1 + c_sum / std::max(s_abs + 1.0, kFirstBets) * wealth;
    double g = d[i];
    // Cutkosky & Orabona's reduction: outside X, a gradient that would move
    // w further out is not bet on (w - x_i and g of opposite signs).
    if ((w - (*x)[i]) * g < 0.0) g = 0.0;
    lmax = std::max(lmax, std::abs(g));
    if (lmax == 0.0) continue;  // no gradient seen yet: no scale, no bet
    const double coin = -g / lmax;
    wealth = std::max(wealth + coin * (w - x1), Epsilon(i, x1));
    s_abs += std::abs(coin);
    c_sum += coin;
    const double next = x1 + c_sum / std::max(s_abs + 1.0, kFirstBets) * wealth;
    if (d[i] != 0.0) reported = std::max(reported, std::abs(next - w) / std::abs(d[i]));
    (*x)[i] = next;
  }
  set_.Project(x);
  return reported;
}

}  // namespace f2obo
