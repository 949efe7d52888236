#include "core/bilevel/bilevel_exact_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/bilevel/bilevel_state.h"
#include "core/metrics/linear_solve.h"

namespace f2obo {

namespace {

// Below this predicted decrease g's own round-off decides the Armijo test.
constexpr double kValueRoundoff = 1e-12;
constexpr double kMinStep = 0x1p-40;

// The current iterate of a Newton-CG solve (y in the InnerSolution, g(y),
// grad_y g(y)) and the backtracking line search that moves it.
class NewtonState {
 public:
  NewtonState(BilevelFamily& family, const VecIn& x, const BatchView& inner, InnerSolution* sol)
      : family_(family),
        x_(x),
        inner_(inner),
        sol_(*sol),
        grad_(family.y_dim()),
        trial_(family.y_dim()),
        trial_grad_(family.y_dim()) {
    value_ = family_.G(x_, sol_.y, inner_, nullptr, &grad_);
    sol_.grad_norm = grad_.norm();
  }

  const Vector& grad() const { return grad_; }

  // Backtracks along `step` from the current y; on success moves there.
  bool LineSearch(const Vector& step) {
    const double slope = grad_.dot(step);
    if (!(slope < 0.0) || !step.allFinite()) return false;  // not a descent direction
    for (double s = 1.0; s >= kMinStep; s *= 0.5) {
      trial_ = sol_.y + s * step;
      const double v = family_.G(x_, trial_, inner_, nullptr, &trial_grad_);
      if (!std::isfinite(v)) continue;
      const bool resolvable = -s * slope > kValueRoundoff * std::abs(value_);
      const bool accept =
          resolvable ? v <= value_ + 1e-4 * s * slope : trial_grad_.norm() < sol_.grad_norm;
      if (accept) {
        sol_.y.swap(trial_);
        grad_.swap(trial_grad_);
        value_ = v;
        sol_.grad_norm = grad_.norm();
        return true;
      }
    }
    return false;
  }

 private:
  BilevelFamily& family_;
  const VecIn& x_;
  const BatchView& inner_;
  InnerSolution& sol_;
  double value_ = 0.0;
  Vector grad_, trial_, trial_grad_;
};

}  // namespace

InnerSolution SolveInner(BilevelFamily& family, const VecIn& x, const BatchView& inner,
                         const VecIn& warm, const ExactMetricsOptions& o) {
  const int n = family.y_dim();
  InnerSolution sol;
  sol.y = warm;
  Vector step(n), hg(n);
  double target = o.inner_tolerance;
  if (o.inner_relative_tolerance > 0.0) {
    // The scale of the data's own gradient, whatever the warm start: a far
    // warm start must not loosen the test.
    family.G(x, Vector::Zero(n), inner, nullptr, &hg);
    const double scale = hg.norm();
    if (std::isfinite(scale)) target = std::max(target, o.inner_relative_tolerance * scale);
  }
  NewtonState state(family, x, inner, &sol);
  const double initial_norm = sol.grad_norm;
  const auto hessian = [&](const Vector& v, Vector* out) {
    family.HvpYYG(x, sol.y, inner, v, out);
  };
  // `grad_norm > target` is false for NaN: non-finite data end the solve.
  while (sol.grad_norm > target && sol.newton_iterations < o.max_newton_iterations) {
    ++sol.newton_iterations;
    const double forcing = std::max(std::min(0.1, sol.grad_norm), o.cg_tolerance);
    sol.cg_iterations +=
        ConjugateGradient(hessian, -state.grad(), forcing, o.max_cg_iterations, &step);
    if (state.LineSearch(step)) continue;
    // Safeguard: the Cauchy step along -grad (plain -grad if the curvature
    // along it is not positive and finite).
    hessian(state.grad(), &hg);
    const double curvature = state.grad().dot(hg);
    const double scale =
        curvature > 0.0 && std::isfinite(curvature) ? state.grad().squaredNorm() / curvature : 1.0;
    step = -scale * state.grad();
    ++sol.cauchy_steps;
    if (!state.LineSearch(step)) break;  // stalled
  }
  sol.converged = sol.grad_norm <= target;
  sol.relative_residual = initial_norm > 0.0 ? sol.grad_norm / initial_norm : 0.0;
  return sol;
}

namespace {

// `cg_warm`: the hypergradient system's initial guess (null: w = 0).
TrueHypergradient Hypergradient(BilevelFamily& family, const VecIn& x, const StepData& data,
                                const VecIn& warm, const ExactMetricsOptions& o,
                                const Vector* cg_warm) {
  const BatchView upper = BatchView::All(data.upper);
  const BatchView inner = BatchView::All(data.inner);
  TrueHypergradient out;
  out.inner = SolveInner(family, x, inner, warm, o);
  const Vector& ys = out.inner.y;
  Vector gx_f(family.x_dim()), gy_f(family.y_dim());
  out.value = family.F(x, ys, upper, &gx_f, &gy_f);
  // Solve grad2_yy g w = grad_y f, then grad F = grad_x f - grad2_xy g w.
  CgOutcome cg;
  const auto hessian = [&](const Vector& v, Vector* r) { family.HvpYYG(x, ys, inner, v, r); };
  if (cg_warm != nullptr) {
    out.w = *cg_warm;
    out.cg_iterations =
        ConjugateGradientFrom(hessian, gy_f, o.cg_tolerance, o.max_cg_iterations, &out.w, &cg);
  } else {
    out.cg_iterations =
        ConjugateGradient(hessian, gy_f, o.cg_tolerance, o.max_cg_iterations, &out.w, &cg);
  }
  out.cg_converged = cg.converged;
  out.cg_relative_residual = cg.relative_residual;
  out.grad.resize(family.x_dim());
  family.HvpXYG(x, ys, inner, out.w, &out.grad);
  out.grad = gx_f - out.grad;
  return out;
}

}  // namespace

TrueHypergradient ComputeTrueHypergradient(BilevelFamily& family, const VecIn& x,
                                           const StepData& data, const VecIn& warm,
                                           const ExactMetricsOptions& o) {
  return Hypergradient(family, x, data, warm, o, nullptr);
}

TrueHypergradient ComputeTrueHypergradientWarm(BilevelFamily& family, const VecIn& x,
                                               const StepData& data, const VecIn& warm,
                                               const ExactMetricsOptions& o,
                                               ExactWarmStart* previous) {
  const int n = family.y_dim();
  bool from_previous = false;
  if (previous->y_star.size() == n && warm.size() == n) {
    const BatchView inner = BatchView::All(data.inner);
    Vector grad(n);
    family.G(x, warm, inner, nullptr, &grad);
    const double at_warm = grad.norm();
    family.G(x, previous->y_star, inner, nullptr, &grad);
    // `<` is false for NaN: a start with a non-finite gradient never wins.
    from_previous = grad.norm() < at_warm || !std::isfinite(at_warm);
    from_previous = from_previous && std::isfinite(grad.norm());
  }
  const Vector* cg_warm = previous->w.size() == n ? &previous->w : nullptr;
  TrueHypergradient out = from_previous
                              ? Hypergradient(family, x, data, previous->y_star, o, cg_warm)
                              : Hypergradient(family, x, data, warm, o, cg_warm);
  if (out.inner.y.allFinite() && out.w.allFinite()) {
    previous->y_star = out.inner.y;
    previous->w = out.w;
  } else {
    *previous = ExactWarmStart{};
  }
  return out;
}

absl::StatusOr<ExactMetrics> ComputeExactMetrics(BilevelFamily& family, const ConstraintSet& set,
                                                 const MetricsInput& in, const StepData& current,
                                                 const StepData* previous,
                                                 const ExactMetricsOptions& o,
                                                 ExactWarmStart* warm) {
  ExactMetrics m;
  m.t = in.t;
  family.Prepare(current);
  const TrueHypergradient now =
      warm != nullptr ? ComputeTrueHypergradientWarm(family, in.x, current, in.y, o, warm)
                      : ComputeTrueHypergradient(family, in.x, current, in.y, o);
  Vector mapping(family.x_dim());
  GradientMapping(set, in.x, now.grad, in.gamma, &mapping);
  m.regret_term = mapping.squaredNorm();
  m.hypergradient_error = (in.h - now.grad).norm();
  m.value = now.value;
  m.true_gradient_norm = now.grad.norm();
  m.inner_residual = now.inner.grad_norm;
  m.newton_iterations = now.inner.newton_iterations;
  m.cg_iterations = now.inner.cg_iterations + now.cg_iterations;
  m.inner_converged = now.inner.converged;
  m.inner_relative_residual = now.inner.relative_residual;
  m.cg_converged = now.cg_converged;
  m.cg_relative_residual = now.cg_relative_residual;
  if (previous != nullptr) {
    family.Prepare(*previous);
    const InnerSolution before =
        SolveInner(family, in.x, BatchView::All(previous->inner), now.inner.y, o);
    const double f_before =
        family.F(in.x, before.y, BatchView::All(previous->upper), nullptr, nullptr);
    m.variation = std::abs(now.value - f_before);
    m.drift = (now.inner.y - before.y).squaredNorm();
    m.newton_iterations += before.newton_iterations;
    m.cg_iterations += before.cg_iterations;
    m.previous_inner_converged = before.converged;
  }
  // Every reported number, including the solve's residual and the true
  // gradient's norm (finite features can still overflow a norm).
  // Checked one by one: their sum can overflow although each is finite.
  bool finite = true;
  for (double v : {m.regret_term, m.hypergradient_error, m.value, m.true_gradient_norm,
                   m.inner_residual, m.inner_relative_residual, m.cg_relative_residual,
                   m.variation.value_or(0.0), m.drift.value_or(0.0)}) {
    finite = finite && std::isfinite(v);
  }
  if (!finite) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics of step ", in.t, ": non-finite result"));
  }
  return m;
}

void Accumulate(const ExactMetrics& m, RunningMetrics* r, double probability) {
  // The running counters come from a (possibly imported) state: saturate
  // rather than overflow.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (r->evaluated_steps < kMax) ++r->evaluated_steps;
  if (r->sums.size() < kBilevelSumCount) r->sums.resize(kBilevelSumCount, 0.0);
  std::vector<double>& sum = r->sums;
  // Counts are doubles in the generic sums: exact up to 2^53 steps.
  if (m.RegretConverged()) {
    sum[kBlreg] += m.regret_term;
  } else {
    sum[kUnconvergedSteps] += 1.0;
  }
  AddSampledTerm(m.RegretConverged() ? std::optional<double>(m.regret_term) : std::nullopt,
                 probability, kBilevelSampleSlots, r);
  if (m.variation.has_value() && m.drift.has_value()) {
    sum[kDriftSteps] += 1.0;
    if (m.DriftConverged()) {
      sum[kVariation] += *m.variation;
      sum[kDrift] += *m.drift;
    } else {
      sum[kUnconvergedDriftSteps] += 1.0;
    }
  }
}

}  // namespace f2obo
