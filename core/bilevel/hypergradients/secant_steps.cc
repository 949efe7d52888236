#include "core/bilevel/hypergradients/secant_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

bool UsesSecantSteps(const AlgorithmInfo& info, bool family_has_hvp, const AlgorithmOptions& o) {
  return info.secant_steps && !family_has_hvp && (AlphaIsAuto(o) || BetaIsAuto(o));
}

absl::Status CheckSecantPart(const Vector& part) {
  if (part.size() != kSecantParts || !std::isfinite(part[0]) || !(part[0] >= 0.0) ||
      !std::isfinite(part[1]) || !(part[1] >= 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state.aux[0]: the automatic inner steps' part must be 2 finite numbers >= 0 [a, theta]",
        part.size() == kSecantParts ? absl::StrCat(", not [", part[0], ", ", part[1], "]")
                                    : absl::StrCat(", not ", part.size(), " numbers")));
  }
  return absl::OkStatus();
}

SecantSteps::SecantSteps(const Vector& part) {
  if (part.size() == kSecantParts) {
    a_ = part[0];
    theta_ = part[1];
  }
}

Vector SecantSteps::Part() const {
  Vector part(kSecantParts);
  part << a_, theta_;
  return part;
}

StepSizes SecantSteps::Next(double lambda, double z_norm, double gz_norm, double y_norm,
                            double d_norm) {
  double a = a_;
  if (!(a > 0.0)) {
    // The probe: a move of kProbe max(1, ||u||) of the iterate whose
    // gradient is larger relative to it (AdGD's small a_0).
    a = kInf;
    if (gz_norm > 0.0) a = std::min(a, kProbe * std::max(1.0, z_norm) / gz_norm);
    if (d_norm > 0.0) a = std::min(a, lambda * kProbe * std::max(1.0, y_norm) / d_norm);
    if (!std::isfinite(a)) a = 0.0;  // both gradients zero: nothing to move
  }
  last_ = a;
  StepSizes s;
  s.alpha = a;
  s.beta = a / lambda;
  return s;
}

void SecantSteps::Observe(double lambda, double gz_prev, double dgz, double d_prev, double dd) {
  const double dz = last_ * gz_prev, dy = last_ / lambda * d_prev;
  double bound = kInf;
  bool seen = false;
  if (dz > 0.0 && std::isfinite(dgz / dz)) {
    l_g_ = dgz / dz;
    seen = true;
    if (l_g_ > 0.0) bound = std::min(bound, 1.0 / (2.0 * l_g_));
  }
  if (dy > 0.0 && std::isfinite(dd / dy)) {
    l_l_ = dd / dy;
    seen = true;
    if (l_l_ > 0.0) bound = std::min(bound, lambda / (2.0 * l_l_));
  }
  if (!seen) return;  // neither iterate moved: the step stands
  const double cap = a_ > 0.0 ? std::min(std::sqrt(1.0 + theta_), max_growth_) * a_ : kInf;
  const double next = std::min(cap, bound);
  // No curvature seen after the probe (g and L linear along the move):
  // probe again rather than take an unbounded step.
  if (!std::isfinite(next) || !(next > 0.0)) return;
  theta_ = last_ > 0.0 ? next / last_ : 0.0;
  a_ = next;
}

Smoothness SecantSteps::Estimate(double lambda) const {
  return Smoothness{l_g_, std::max(l_l_ - lambda * l_g_, 0.0), SmoothnessSource::kSecant};
}

absl::StatusOr<int64_t> SecantRoundLoops(BilevelFamily& family, const VecIn& x, double lambda,
                                         int k, const BatchView& upper, const BatchView& inner,
                                         Vector* y, Vector* z, FirstOrderWorkspace* ws,
                                         SecantWorkspace* sws, SecantSteps* rule, StepSizes* last,
                                         BilevelReport* report, RoundControl* control,
                                         GradYF grad_y_f) {
  const auto observe = [&] {
    rule->Observe(lambda, sws->gz_prev.norm(), (ws->gz - sws->gz_prev).norm(), sws->d_prev.norm(),
                  (ws->gy_f - sws->d_prev).norm());
  };
  int64_t rows = 0;
  for (int i = 0; i < k; ++i) {
    if (absl::Status st = ContinueRound(control); !st.ok()) return st;
    // d = grad_y f + lambda grad_y g at y lands in ws->gy_f (Alg. 1 line 6).
    family.InnerIterationDirection(x, *z, *y, lambda, upper, inner, &ws->gz, &ws->gy_g, &ws->gy_f);
    rows += inner.rows.n + upper.rows.n;
    if (i > 0) observe();
    *last = rule->Next(lambda, z->norm(), ws->gz.norm(), y->norm(), ws->gy_f.norm());
    z->noalias() -= last->alpha * ws->gz;
    y->noalias() -= last->beta * ws->gy_f;
    sws->gz_prev = ws->gz;
    sws->d_prev = ws->gy_f;
  }
  // The pass of h_t holds grad_y g(z_{K+1}) and grad_y L(y_{K+1}): the
  // last step's secant, for the next round's first step.
  rows += Hypergradient(family, x, *y, *z, lambda, upper, inner, ws, report, grad_y_f);
  observe();
  return rows;
}

}  // namespace f2obo
