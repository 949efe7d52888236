#include "core/metrics/exact_metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/bilevel/bilevel_state.h"
#include "core/metrics/linear_solve.h"

namespace f2obo {

InnerSolution SolveInner(Family& family, const VecIn& x, const BatchView& inner,
                         const VecIn& warm, const ExactMetricsOptions& o) {
  const int n = family.y_dim();
  InnerSolution sol;
  sol.y = warm;
  Vector grad(n), step(n), trial(n), neg_grad(n);
  double value = family.G(x, sol.y, inner, nullptr, &grad);
  sol.grad_norm = grad.norm();
  const double initial_norm = sol.grad_norm;
  for (int it = 0; it < o.max_newton_iterations && sol.grad_norm > o.inner_tolerance;
       ++it) {
    // Inexact Newton: forcing term min(0.1, ||g||) gives superlinear convergence.
    neg_grad = -grad;
    const double forcing = std::min(0.1, sol.grad_norm);
    sol.cg_iterations += ConjugateGradient(
        [&](const Vector& v, Vector* out) { family.HvpYYG(x, sol.y, inner, v, out); },
        neg_grad, std::max(forcing, o.cg_tolerance), o.max_cg_iterations, &step);
    ++sol.newton_iterations;
    // Backtracking (Armijo) on g; near the optimum g's decrease drowns in
    // round-off, so a step that lowers ||grad|| is accepted as well.
    const double slope = grad.dot(step);
    bool accepted = false;
    Vector trial_grad(n);
    for (double s = 1.0; s > 1e-10; s *= 0.5) {
      trial = sol.y + s * step;
      const double v = family.G(x, trial, inner, nullptr, &trial_grad);
      if (v <= value + 1e-4 * s * slope || trial_grad.norm() < sol.grad_norm) {
        sol.y = trial;
        value = v;
        grad = trial_grad;
        accepted = true;
        break;
      }
    }
    const double previous = sol.grad_norm;
    sol.grad_norm = grad.norm();
    if (!accepted || !(sol.grad_norm < previous)) break;
  }
  sol.converged = sol.grad_norm <= o.inner_tolerance;
  sol.relative_residual = initial_norm > 0.0 ? sol.grad_norm / initial_norm : 0.0;
  return sol;
}

TrueHypergradient ComputeTrueHypergradient(Family& family, const VecIn& x,
                                           const StepData& data, const VecIn& warm,
                                           const ExactMetricsOptions& o) {
  const BatchView upper = BatchView::All(data.upper);
  const BatchView inner = BatchView::All(data.inner);
  TrueHypergradient out;
  out.inner = SolveInner(family, x, inner, warm, o);
  const Vector& ys = out.inner.y;
  Vector gx_f(family.x_dim()), gy_f(family.y_dim()), w(family.y_dim());
  out.value = family.F(x, ys, upper, &gx_f, &gy_f);
  // Solve grad2_yy g w = grad_y f, then grad F = grad_x f - grad2_xy g w.
  CgOutcome cg;
  out.cg_iterations = ConjugateGradient(
      [&](const Vector& v, Vector* r) { family.HvpYYG(x, ys, inner, v, r); }, gy_f,
      o.cg_tolerance, o.max_cg_iterations, &w, &cg);
  out.cg_converged = cg.converged;
  out.cg_relative_residual = cg.relative_residual;
  out.grad.resize(family.x_dim());
  family.HvpXYG(x, ys, inner, w, &out.grad);
  out.grad = gx_f - out.grad;
  return out;
}

absl::StatusOr<ExactMetrics> ComputeExactMetrics(Family& family,
                                                 const ConstraintSet& set,
                                                 const MetricsInput& in,
                                                 const StepData& current,
                                                 const StepData* previous,
                                                 const ExactMetricsOptions& o) {
  ExactMetrics m;
  m.t = in.t;
  family.Prepare(current);
  const TrueHypergradient now = ComputeTrueHypergradient(family, in.x, current, in.y, o);
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

void Accumulate(const ExactMetrics& m, RunningMetrics* r) {
  // The running counters come from a (possibly imported) state: saturate
  // rather than overflow.
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (r->evaluated_steps < kMax) ++r->evaluated_steps;
  if (r->sums.size() < kBilevelSumCount) r->sums.resize(kBilevelSumCount, 0.0);
  std::vector<double>& sum = r->sums;
  sum[kBlreg] += m.regret_term;
  if (m.variation.has_value() && m.drift.has_value()) {
    sum[kDriftSteps] += 1.0;  // a double counts exactly up to 2^53 steps
    sum[kVariation] += *m.variation;
    sum[kDrift] += *m.drift;
  }
}

}  // namespace f2obo
