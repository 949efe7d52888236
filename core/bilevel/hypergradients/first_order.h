// Pieces shared by the fully first-order rounds (paper Algorithms 1-3).
#ifndef F2OBO_CORE_BILEVEL_HYPERGRADIENTS_FIRST_ORDER_H_
#define F2OBO_CORE_BILEVEL_HYPERGRADIENTS_FIRST_ORDER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/bilevel/bilevel_family.h"
#include "core/bilevel/bilevel_report.h"
#include "core/constraint.h"
#include "core/options.h"
#include "core/round_control.h"

namespace f2obo {

// Scratch for one round, sized once per session so rounds do not allocate;
// a session whose rounds wait for a remote client (the oracle families)
// frees it between rounds instead (Release), since three y-sized vectors
// held idle would be 1.5 times its state.
struct FirstOrderWorkspace {
  FirstOrderWorkspace(int d1, int d2)
      : gz(d2), gy_g(d2), gy_f(d2), gx_f(d1), gx_g_y(d1), gx_g_z(d1), d2_(d2) {}
  // Sizes the vectors again after a Release (no-op otherwise).
  void Ensure() {
    if (gz.size() == d2_) return;
    for (Vector* v : {&gz, &gy_g, &gy_f}) v->resize(d2_);
  }
  void Release() {
    for (Vector* v : {&gz, &gy_g, &gy_f}) v->resize(0);
  }
  Vector gz;      // grad_y g at z
  Vector gy_g;    // grad_y g at y
  Vector gy_f;    // grad_y f at y
  Vector gx_f;    // grad_x f at y
  Vector gx_g_y;  // grad_x g at y
  Vector gx_g_z;  // grad_x g at z

 private:
  int d2_;
};

// lambda_{t+1} = min((1 + 1/t)^tau lambda_t, lambda_max)   (Alg. 1 line 11)
double NextLambda(const AlgorithmOptions& o, int64_t t, double lambda);

// lambda_{t+1} of the "follow" schedule, F2OBO's and AF2OBO's default
// (lambda_schedule = paper gives NextLambda):
//   lambda_{t+1} = (1 + 1/t)^tau lambda_t      while the inner loops keep up (rho_t <= 1/2),
//   lambda_{t+1} = (1 + 1/t)^(tau/2) lambda_t  otherwise,
// capped by lambda_max, so that lambda_1 t^(tau/2) <= lambda_t <= lambda_1 t^tau.
// `r` is the round's report after Hypergradient(..., GradYF::kMeasure)
// (its residuals and ||grad_y f||).
//
// Why the full rate only while the loops keep up.  The round's h_t carries
// the inner loops' error multiplied by lambda: with z off z*(x) by
// ||grad_y g(x, z)|| / mu_g and y off y_lambda(x) by ||grad_y L(x, y)|| /
// (lambda mu_g),
//   ||h_t - grad L*_lambda(x)|| <~ (L_g,xy / mu_g) (lambda ||grad_y g(x, z)|| + ||grad_y L(x,
//   y)||),
// while the signal, lambda grad2_xy g (y_lambda - z*) ~ grad2_xy g
// [grad2_yy g]^-1 grad_y f, is of the order (L_g,xy / mu_g) ||grad_y f||.
// Their ratio needs neither constant:
//   rho_t = max(||grad_y L(x_t, y)||, lambda_t ||grad_y g(x_t, z)||) / ||grad_y f(x_t, y)||.
// On a static problem the loops converge, rho_t -> 0 and the schedule is
// the paper's lambda_1 t^tau (Theorems 3.1 / 4.1 as stated).  On a stream
// with K fixed inner steps ||grad_y g_t(x_t, z)|| does not fall below the
// batch-to-batch change of g_t, and a lambda growing like t only multiplies
// that error (the paper's schedule on the quality suite, lambda_T = 5,000:
// f2obo's y diverged on loss tuning in the 100x box, af2obo lost to its
// untuned start in 1 of 3 seeds of each box).
//
// Why the floor tau/2, not lambda_t held.  Held at lambda_1 (the first
// version of this schedule) the penalty's bias ||grad L*_lambda(x) -
// grad F(x)|| = O(1/lambda) (Kwon et al., ICML 2023, Lemma 3.1) stays
// O(1/lambda_1) for good: on digits it asked for L2 penalties the served
// model does not need, and the tuned x lost to its own untuned start
// (bench/RESULTS.md).  The bias enters Theorem 3.1's and Theorem 4.1's
// regret as sum_t 1/lambda_t^2 ~ sum_t t^(-2 tau'), tau' the growth
// exponent: with tau' >= tau/2 = 1/2 (tau = 1, the default) it is
// O(log T), the paper's own choice for AF2OBO in Sec. 4.2 ("tau = 1/2:
// O(log T + V_T)", at O(T^2 + T H_2,T) inner iterations instead of
// tau = 1's O(T^3)), while the error lambda_t carries grows as sqrt(t)
// instead of t.  What it trades: on a stream where the loops never keep up,
// Theorem 3.1's O(1) bias term becomes O(log T).  F2OBO-SL (K = 1,
// Theorem 3.2: tau in (0, 1/2)) stays inside the theorem's range at both
// rates whenever its tau is.
inline constexpr double kPenaltyErrorShare = 0.5;
inline constexpr double kPenaltyFloorShare = 0.5;  // the floor's exponent: tau / 2
double NextLambdaFollowing(const AlgorithmOptions& o, int64_t t, double lambda,
                           const BilevelReport& r);

// Smoothness estimate when a step size is "auto" (SPEC section 3), else
// zeros.  Estimated at (x_t, y_t) on the full step batches.
Smoothness SmoothnessIfAuto(const AlgorithmOptions& o, BilevelFamily& family, const VecIn& x,
                            const VecIn& y, const StepData& data);

// Step sizes of Algorithms 1-2: beta_t = beta / lambda_t ("scaled"), beta
// ("fixed"), or 1/(2 lambda_t L_g1 + L_f1) when auto (theory: beta_t <=
// 1/(2 lambda_t L_g1), Theorem 3.1); alpha as set, or MatchedAlpha when
// auto; and the upper step gamma_t (UpperStepSize).
// The automatic z-step.  With an automatic y-step too it is lambda_t beta_t
// (<= 1/(2 L_g1), inside Theorem 3.1's alpha <= 1/L_g1), so that the z-loop
// and the g part of the y-loop take the same steps: then y - z is driven by
// grad_y f alone and lambda_t (grad_x g(y) - grad_x g(z)) estimates the
// hypergradient.  With alpha = 1/L_g1 instead, z ran twice as fast as y,
// and the hypergradient carried lambda_t times that lag (on a stream the
// loops never converge): it grew with lambda_t and pushed the penalties of
// ridge_hpo / logistic_hpo up whatever the data (bench/
// EXPERIMENTS.md).  With a fixed y-step: 1/L_g1.
double MatchedAlpha(const AlgorithmOptions& o, const Smoothness& sm, double lambda, double beta);

struct StepSizes {
  double alpha = 0.0;
  double beta = 0.0;
  double gamma = 0.0;
};
StepSizes DeterministicStepSizes(const AlgorithmOptions& o, const Smoothness& sm, double lambda,
                                 int64_t t);

// gamma_t: gamma ("constant", the paper's experiments) or gamma t^-tau
// ("theory": Theorem 3.2 takes gamma_t < 1/(8 lambda_1 t^tau) sqrt(...)).
double UpperStepSize(const AlgorithmOptions& o, int64_t t);

// The options every round of the F2OBO family reads: the multiplier
// schedule, the upper step and its schedule.
OptionSet PenaltyRoundOptions();

// The checks every penalty round needs beyond each option's rule: lambda_max
// >= lambda1, and a y-step that cannot outgrow the theory's bound: fixed
// beta with tau > 0 and no lambda_max makes beta_t lambda_t = beta lambda_1
// t^tau grow without bound (Theorem 3.1 needs beta_t <= 1/(2 lambda_t L_g1)).
absl::Status CheckPenaltyOptions(const AlgorithmOptions& o);

// gamma_schedule = theory needs a gamma set: the automatic step (gamma = 0,
// core/bilevel/hypergradients/upper_step.h) has no gamma to scale.
absl::Status CheckUpperStepOptions(const AlgorithmOptions& o);
// The multi-task rounds keep the fixed step: gamma > 0.
inline constexpr double kMultitaskDefaultGamma = 0.001;
absl::Status CheckFixedUpperStep(const AlgorithmOptions& o);

// Records the round's multiplier, step sizes and smoothness estimates.
void RecordStepSizes(const AlgorithmOptions& o, const Smoothness& sm, double lambda,
                     const StepSizes& steps, BilevelReport* report);

// Alg. 1 lines 4-7, K times from the warm starts z, y at x:
//   z <- z - alpha grad_y g(x, z)
//   y <- y - beta (grad_y f(x, y) + lambda grad_y g(x, y))
// both gradients of g in one pass (GradYGPair).  Returns the rows read.
// (F2OBO's loop; mt_f2obo runs it per task.)
// Returns the rows read, or the status of `control` when it stopped the
// round between two of the K iterations.
absl::StatusOr<int64_t> PenaltyInnerLoops(BilevelFamily& family, const VecIn& x, double alpha,
                                          double beta, double lambda, int k, const BatchView& upper,
                                          const BatchView& inner, Vector* y, Vector* z,
                                          FirstOrderWorkspace* ws, RoundControl* control);

// h_t = grad_x f(x, y) + lambda (grad_x g(x, y) - grad_x g(x, z))
// (Alg. 1 line 9, Alg. 2 line 10, Alg. 3 line 10 on the given views).
// Also records the final residuals ||grad_y L(y)|| and ||grad_y g(z)||
// computed in the same passes.  Returns the rows read.
// With GradYF::kMeasure also ||grad_y f(x, y)|| (report->grad_y_f, which
// NextLambdaFollowing reads), from the same gradients taken apart.
enum class GradYF { kSkip, kMeasure };
// kMeasure when the follow schedule needs ||grad_y f|| (NextLambdaFollowing).
inline GradYF MeasuresGradYF(const AlgorithmOptions& o) {
  return o.lambda_schedule == LambdaSchedule::kFollow ? GradYF::kMeasure : GradYF::kSkip;
}
int64_t Hypergradient(BilevelFamily& family, const VecIn& x, const VecIn& y, const VecIn& z,
                      double lambda, const BatchView& upper, const BatchView& inner,
                      FirstOrderWorkspace* ws, BilevelReport* report,
                      GradYF grad_y_f = GradYF::kSkip);

// x <- P_X(x - gamma h)   (Alg. 1 line 10, the prox form of a projected step)
void ProjectedStep(const ConstraintSet& set, double gamma, const Vector& h, Vector* x);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_HYPERGRADIENTS_FIRST_ORDER_H_
