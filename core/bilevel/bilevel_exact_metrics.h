// Exact per-step metrics (SPEC section 5): the true hypergradient at x_t,
// the local-regret term, hypergradient error, function variation and
// inner-solution drift.  These use second-order information (Newton-CG and
// CG on HVPs) and cost more than a round, so they are computed on demand,
// typically off the request path on a family instance of their own.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_EXACT_METRICS_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_EXACT_METRICS_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "core/bilevel/bilevel_family.h"
#include "core/constraint.h"
#include "core/state.h"

namespace f2obo {

struct ExactMetricsOptions {
  // The inner solve stops, converged, once
  //   ||grad_y g_t(x, y)|| <= max(inner_tolerance,
  //                               inner_relative_tolerance ||grad_y g_t(x, 0)||).
  // ||grad_y g_t(x, 0)|| is the scale of the data's gradient terms, which
  // cancel at y*: round-off leaves about 1e-15 of it in the computed
  // gradient, so the relative term lets a problem with large features or
  // targets converge where inner_tolerance lies below that floor.  It does
  // not depend on the warm start (relative to the warm start's gradient, a
  // far warm start would loosen the test).  ||y - y*|| is at most the
  // residual over the strong-convexity constant of g.
  double inner_tolerance = 1e-10;
  double inner_relative_tolerance = 1e-14;
  int max_newton_iterations = 100;
  double cg_tolerance = 1e-12;  // relative residual of the Hessian system
  int max_cg_iterations = 1000;
};

// y*(x) = argmin_y g(x, y) on `inner` from `warm`, for g strongly convex in
// y, by line-search Newton-CG (Nocedal & Wright, Numerical Optimization,
// 2nd ed., Alg. 7.1), globally convergent:
//  * direction: CG on grad2_yy g p = -grad_y g (HVPs) from p = 0 to the
//    relative residual min(0.1, ||grad_y g||) (inexact Newton, superlinear
//    near y*).  If p is not a descent direction (grad . p >= 0 or not
//    finite, e.g. CG capped at zero iterations), or its line search fails,
//    the safeguard takes the Cauchy step instead: the minimizer of the
//    quadratic model along -grad, -(||grad||^2 / grad.H grad) grad.
//  * step length: backtracking s = 1, 1/2, ..., 2^-40 until the Armijo
//    condition on g itself, g(y + s p) <= g(y) + 1e-4 s grad.p.  Where the
//    predicted decrease -s grad.p is below g's round-off (1e-12 |g|), g
//    cannot tell better from worse; there the step is accepted if it lowers
//    ||grad_y g|| (which every descent direction above does for small s).
//    A step that lowers g may raise ||grad_y g||: the solve goes on (the
//    old solver stopped there, at residuals around 0.3 on cross-entropy).
//  * stop: converged by the test of ExactMetricsOptions; unconverged when
//    max_newton_iterations are used up or both line searches fail (the
//    residual then sits at g's round-off floor or the data are not
//    finite).
struct InnerSolution {
  Vector y;
  double grad_norm = 0.0;  // ||grad_y g(x, y)|| reached
  // grad_norm / ||grad_y g(x, warm)|| (0 if the warm start was exact).
  double relative_residual = 0.0;
  // The stop test above held; false when Newton stopped at
  // max_newton_iterations or stalled (no step passed either line search).
  bool converged = false;
  int newton_iterations = 0;
  int cg_iterations = 0;
  int cauchy_steps = 0;  // iterations that took the safeguard's Cauchy step
};
InnerSolution SolveInner(BilevelFamily& family, const VecIn& x, const BatchView& inner,
                         const VecIn& warm, const ExactMetricsOptions& o);

// grad F(x) = grad_x f - grad2_xy g [grad2_yy g]^{-1} grad_y f at (x, y*(x))
// (paper Eq. 1), with the linear system solved by CG on HVPs.
struct TrueHypergradient {
  Vector grad;
  double value = 0.0;  // F(x) = f(x, y*(x))
  InnerSolution inner;
  Vector w;  // the solution of grad2_yy g w = grad_y f
  int cg_iterations = 0;
  // The CG solve of grad2_yy g w = grad_y f: whether it reached
  // cg_tolerance, and ||grad2_yy g w - grad_y f|| / ||grad_y f|| at the end.
  bool cg_converged = false;
  double cg_relative_residual = 0.0;
};
TrueHypergradient ComputeTrueHypergradient(BilevelFamily& family, const VecIn& x,
                                           const StepData& data, const VecIn& warm,
                                           const ExactMetricsOptions& o);

// The solutions of the last evaluated step, kept by a metrics evaluator as
// warm starts for the next one: consecutive steps'
// systems differ by one round's move of x and one batch's drift, so the
// previous y* and hypergradient system solution w are close to the new
// ones.  Empty vectors: none yet.
struct ExactWarmStart {
  Vector y_star;  // y*_s(x_s) of the last evaluated step s
  Vector w;       // [grad2_yy g]^{-1} grad_y f there
};

// ComputeTrueHypergradient from the closer of `warm` (the algorithm's y_t)
// and previous->y_star -- the one with the smaller ||grad_y g(x, .)||,
// which bounds the distance to y* over g's strong convexity -- with the
// hypergradient system's CG started from previous->w
// (ConjugateGradientFrom); then keeps this step's solutions in `previous`
// (cleared if they are not finite).  Same stop tests, so the same answer
// to the solver's tolerances; fewer iterations where the stream drifts
// slowly.  One gradient of g more than the cold solve to compare the
// starts, one HVP more to read w's residual.
TrueHypergradient ComputeTrueHypergradientWarm(BilevelFamily& family, const VecIn& x,
                                               const StepData& data, const VecIn& warm,
                                               const ExactMetricsOptions& o,
                                               ExactWarmStart* previous);

// What the metrics of step t need besides the batches.
struct MetricsInput {
  int64_t t = 0;
  Vector x;      // x_t, the decision the round started from
  Vector y;      // y_t (warm start for the inner solve)
  Vector h;      // h_t, the round's hypergradient estimate
  double gamma;  // the algorithm's upper step size
};

struct ExactMetrics {
  int64_t t = 0;
  double regret_term = 0.0;          // ||G_X(x_t, grad F_t(x_t), gamma)||^2
  double hypergradient_error = 0.0;  // ||h_t - grad F_t(x_t)||
  double value = 0.0;                // F_t(x_t)
  double true_gradient_norm = 0.0;   // ||grad F_t(x_t)||
  double inner_residual = 0.0;       // ||grad_y g_t(x_t, y*)|| of the solve
  // With the previous step's batches, evaluated at x_t (not a sup over X):
  std::optional<double> variation;  // |F_t(x_t) - F_{t-1}(x_t)|
  std::optional<double> drift;      // ||y*_t(x_t) - y*_{t-1}(x_t)||^2
  int newton_iterations = 0;
  int cg_iterations = 0;
  // Whether the numbers above can be trusted to the configured tolerances
  // (a capped or stalled solve still returns finite, plausible numbers):
  //  * inner_converged: the step-t inner solve met its stop test (its
  //    residual is inner_residual; inner_relative_residual is that over
  //    the residual at the warm start y_t);
  //  * cg_converged: the hypergradient system reached cg_tolerance, with
  //    final relative residual cg_relative_residual;
  //  * previous_inner_converged: the step t-1 inner solve behind variation
  //    and drift (empty when they are).
  // false by default, so a metrics struct not filled by ComputeExactMetrics
  // reads as unconverged.  Which metric rests on which solve:
  //   value                                   inner_converged
  //   regret_term, hypergradient_error,
  //   true_gradient_norm                      RegretConverged()
  //   variation, drift                        DriftConverged()
  bool inner_converged = false;
  double inner_relative_residual = 0.0;
  bool cg_converged = false;
  double cg_relative_residual = 0.0;
  std::optional<bool> previous_inner_converged;

  bool RegretConverged() const { return inner_converged && cg_converged; }
  // False when variation and drift are absent.
  bool DriftConverged() const {
    return inner_converged && previous_inner_converged.value_or(false);
  }
};

// Computes the metrics of step t.  `previous` may be null (first step, or
// its batches were not kept), leaving variation and drift empty.  Fails
// only on non-finite results.
// With `warm` (not null) the step-t solves start from the last evaluated
// step's solutions and leave this step's there
// (ComputeTrueHypergradientWarm).
absl::StatusOr<ExactMetrics> ComputeExactMetrics(BilevelFamily& family, const ConstraintSet& set,
                                                 const MetricsInput& in, const StepData& current,
                                                 const StepData* previous,
                                                 const ExactMetricsOptions& o = {},
                                                 ExactWarmStart* warm = nullptr);

// Adds one step's metrics to the running sums (BLReg, V_T, H_2,T
// estimates).  An unconverged value is never summed: a step whose regret
// term is not RegretConverged() counts in evaluated_steps and in
// unconverged_steps but adds nothing to blreg; a step whose variation and
// drift are not DriftConverged() counts in drift_steps and in
// unconverged_drift_steps but adds nothing to variation or drift.  So blreg
// sums evaluated_steps - unconverged_steps terms, each to the solver's
// tolerances, and a reader sees how many were left out (an unconverged
// solve can be off by orders of magnitude, so a sum that included it would
// be worth nothing, and one term cannot be corrected later).
// `probability`: p_t, the probability the step was sampled with
// (core/metrics/sampling.h): a converged regret term is added to the
// Horvitz-Thompson sums too.
void Accumulate(const ExactMetrics& m, RunningMetrics* running, double probability = 1.0);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_EXACT_METRICS_H_
