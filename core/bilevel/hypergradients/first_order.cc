#include "core/bilevel/hypergradients/first_order.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace f2obo {

double NextLambda(const AlgorithmOptions& o, int64_t t, double lambda) {
  const double next = std::pow(1.0 + 1.0 / static_cast<double>(t), o.tau) * lambda;
  return std::min(next, o.lambda_max);
}

double NextLambdaFollowing(const AlgorithmOptions& o, int64_t t, double lambda,
                           const BilevelReport& r) {
  if (o.lambda_schedule == LambdaSchedule::kPaper) return NextLambda(o, t, lambda);
  const double error = std::max(r.residual_y, lambda * r.residual_z);
  // A NaN compares false: a non-finite signal or error takes the floor, and
  // so does a zero signal unless the error is zero as well.
  const bool keeping_up = error <= kPenaltyErrorShare * r.grad_y_f;
  const double exponent = keeping_up ? o.tau : kPenaltyFloorShare * o.tau;
  const double next = std::pow(1.0 + 1.0 / static_cast<double>(t), exponent) * lambda;
  return std::min(next, o.lambda_max);
}

Smoothness SmoothnessIfAuto(const AlgorithmOptions& o, BilevelFamily& family, const VecIn& x,
                            const VecIn& y, const StepData& data) {
  if (!AlphaIsAuto(o) && !BetaIsAuto(o)) return Smoothness{};
  return family.EstimateSmoothness(x, y, data);
}

double UpperStepSize(const AlgorithmOptions& o, int64_t t) {
  if (o.gamma_schedule == GammaSchedule::kConstant) return o.gamma;
  return o.gamma * std::pow(static_cast<double>(t), -o.tau);
}

OptionSet PenaltyRoundOptions() {
  return {Opt::lambda1, Opt::tau, Opt::lambda_max, Opt::gamma, Opt::gamma_schedule};
}

absl::Status CheckUpperStepOptions(const AlgorithmOptions& o) {
  if (o.gamma == 0.0 && o.gamma_schedule == GammaSchedule::kTheory) {
    return absl::InvalidArgumentError(
        "options.gamma_schedule: theory scales a gamma set (gamma_t = gamma t^-tau); with gamma "
        "= 0 (automatic) the steps adapt on their own: set gamma > 0 or use constant");
  }
  return absl::OkStatus();
}

absl::Status CheckFixedUpperStep(const AlgorithmOptions& o) {
  if (!(o.gamma > 0.0)) {
    return absl::InvalidArgumentError(
        "options.gamma: 0 (the automatic upper step) is the bilevel class's; the multi-task "
        "rounds need gamma > 0 (default 0.001)");
  }
  return absl::OkStatus();
}

absl::Status CheckPenaltyOptions(const AlgorithmOptions& o) {
  if (absl::Status s = CheckUpperStepOptions(o); !s.ok()) return s;
  if (!(o.lambda_max >= o.lambda1)) {
    return absl::InvalidArgumentError(absl::StrCat("options.lambda_max: ", o.lambda_max,
                                                   " must be >= lambda1 = ", o.lambda1,
                                                   " (inf for no cap)"));
  }
  if (!BetaIsAuto(o) && o.beta_scaling == BetaScaling::kFixed && o.tau > 0.0 &&
      std::isinf(o.lambda_max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.beta_scaling: fixed with tau = ", o.tau,
        " > 0 and no lambda_max makes beta lambda_t = beta lambda_1 t^tau grow without "
        "bound, so the y-loop diverges (Theorem 3.1 needs beta_t <= 1/(2 lambda_t L_g1)); "
        "use scaled, tau = 0, or cap lambda with lambda_max"));
  }
  return absl::OkStatus();
}

double MatchedAlpha(const AlgorithmOptions& o, const Smoothness& sm, double lambda, double beta) {
  return BetaIsAuto(o) ? lambda * beta : 1.0 / sm.l_g1;
}

StepSizes DeterministicStepSizes(const AlgorithmOptions& o, const Smoothness& sm, double lambda,
                                 int64_t t) {
  StepSizes s;
  s.gamma = UpperStepSize(o, t);
  s.beta = BetaIsAuto(o)                            ? 1.0 / (2.0 * lambda * sm.l_g1 + sm.l_f1)
           : o.beta_scaling == BetaScaling::kScaled ? o.beta / lambda
                                                    : o.beta;
  s.alpha = !AlphaIsAuto(o) ? o.alpha : MatchedAlpha(o, sm, lambda, s.beta);
  return s;
}

void RecordStepSizes(const AlgorithmOptions& o, const Smoothness& sm, double lambda,
                     const StepSizes& steps, BilevelReport* report) {
  report->lambda = lambda;
  report->alpha = steps.alpha;
  report->beta = steps.beta;
  report->gamma = steps.gamma;
  report->step_sizes_auto = AlphaIsAuto(o) || BetaIsAuto(o);
  report->l_g1 = sm.l_g1;
  report->l_f1 = sm.l_f1;
  report->smoothness_source = sm.source;
}

absl::StatusOr<int64_t> PenaltyInnerLoops(BilevelFamily& family, const VecIn& x, double alpha,
                                          double beta, double lambda, int k, const BatchView& upper,
                                          const BatchView& inner, Vector* y, Vector* z,
                                          FirstOrderWorkspace* ws, RoundControl* control) {
  int64_t rows = 0;
  for (int i = 0; i < k; ++i) {
    if (absl::Status st = ContinueRound(control); !st.ok()) return st;
    family.InnerIterationDirection(x, *z, *y, lambda, upper, inner, &ws->gz, &ws->gy_g, &ws->gy_f);
    z->noalias() -= alpha * ws->gz;
    y->noalias() -= beta * ws->gy_f;
    rows += inner.rows.n + upper.rows.n;
  }
  return rows;
}

int64_t Hypergradient(BilevelFamily& family, const VecIn& x, const VecIn& y, const VecIn& z,
                      double lambda, const BatchView& upper, const BatchView& inner,
                      FirstOrderWorkspace* ws, BilevelReport* report, GradYF grad_y_f) {
  if (grad_y_f == GradYF::kMeasure) {
    // The six gradients apart, then the sum the fused call forms: the same
    // numbers as the fused call for families on the default
    // HypergradientDirection (the built-in ones); the oracle family's client
    // fuses in its own arithmetic, so there it may differ in the last bits.
    // The client sends grad_y f and grad_y g(y) as two vectors instead of
    // their sum, in the same query.
    family.HypergradientGrads(x, y, z, upper, inner, &ws->gx_f, &ws->gy_f, &ws->gx_g_y, &ws->gy_g,
                              &ws->gx_g_z, &ws->gz);
    report->grad_y_f = ws->gy_f.norm();
    ws->gy_f += lambda * ws->gy_g;  // grad_y L
  } else {
    family.HypergradientDirection(x, y, z, lambda, upper, inner, &ws->gx_f, &ws->gy_f, &ws->gx_g_y,
                                  &ws->gy_g, &ws->gx_g_z, &ws->gz);  // gy_f: grad_y L
  }
  report->hypergradient.noalias() = ws->gx_f + lambda * (ws->gx_g_y - ws->gx_g_z);
  report->residual_y = ws->gy_f.norm();
  report->residual_z = ws->gz.norm();
  return upper.rows.n + 2 * static_cast<int64_t>(inner.rows.n);
}

void ProjectedStep(const ConstraintSet& set, double gamma, const Vector& h, Vector* x) {
  x->noalias() -= gamma * h;
  set.Project(x);
}

}  // namespace f2obo
