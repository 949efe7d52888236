// SF2OBO, paper Algorithm 3.  Per step t, from warm starts z_t, y_t:
//   for k = 1..K_t:                                               (lines 4-8)
//     draw xi (B_t upper rows) and zeta (B_t inner rows)
//     z <- z - alpha_t grad_y g_t(x_t, z; zeta)
//     y <- y - beta_t (grad_y f_t(x_t, y; xi) + lambda_t grad_y g_t(x_t, y; zeta))
//   draw xi_t, zeta_t of Bhat_t rows                              (line 9)
//   h_t = grad_x f(x_t, y; xi_t) + lambda_t (grad_x g(x_t, y; zeta_t)
//         - grad_x g(x_t, z; zeta_t))                              (line 10)
//   x_{t+1} = P_X(x_t - gamma_t h_t); lambda_{t+1} = (1 + 1/t)^tau lambda_t
// with alpha_t = alpha / t^a, beta_t = beta / (lambda_1 t^b), B_t = ceil(t^B2),
// Bhat_t = ceil(t^B1) (Theorem 5.1), sizes capped at the batch's rows.
//
// Draws are without replacement within a mini-batch, from the session RNG;
// a draw that would take every row uses the whole batch and consumes no
// randomness.  Families without sample rows (quadratic) are used whole.
#include "core/bilevel/algorithms/sf2obo.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/upper_step.h"
#include "core/hypergradients/row_sampler.h"

namespace f2obo {
namespace {

class Sf2obo final : public BilevelAlgorithm {
 public:
  explicit Sf2obo(const BilevelAlgorithmContext& ctx)
      : o_(ctx.options),
        ws_(ctx.x_dim, ctx.y_dim),
        upper_step_(ctx.options, ctx.constraint, ctx.x_dim, /*slot=*/0) {}

  std::vector<int> AuxLayout() const override {
    std::vector<int> sizes;
    upper_step_.AppendLayout(&sizes);
    return sizes;
  }

  void ReleaseScratch() override { ws_.Release(); }

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    ws_.Ensure();
    const int64_t t = s->t;
    const double td = static_cast<double>(t);
    const double lambda = s->lambda;
    const Smoothness sm = SmoothnessIfAuto(o_, family, s->x, s->y, data);
    // Base steps at lambda_1 (beta_t lambda_t = beta_1 lambda_1 t^(tau - b));
    // automatic ones matched as in F2OBO (MatchedAlpha).
    const double beta1 =
        BetaIsAuto(o_) ? 1.0 / (2.0 * o_.lambda1 * sm.l_g1 + sm.l_f1) : o_.beta / o_.lambda1;
    const double alpha1 = AlphaIsAuto(o_) ? MatchedAlpha(o_, sm, o_.lambda1, beta1) : o_.alpha;
    const double alpha = alpha1 / std::pow(td, o_.alpha_decay);
    const double beta = beta1 / std::pow(td, o_.beta_decay);
    const int n_up = data.upper.rows(), n_in = data.inner.rows();
    const int b_up = ScheduledBatchSize(o_.batch_scale, o_.batch_growth, t, n_up);
    const int b_in = ScheduledBatchSize(o_.batch_scale, o_.batch_growth, t, n_in);
    const int k_steps =
        o_.inner_schedule == InnerSchedule::kFixed ? o_.inner_steps : ScheduledInnerSteps(o_, t);
    sampler_.Reserve(data);
    int64_t rows = 0;
    for (int k = 0; k < k_steps; ++k) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      const BatchView xi = sampler_.DrawUpper(data.upper, b_up, &s->rng);
      const BatchView zeta = sampler_.DrawInner(data.inner, b_in, &s->rng);
      family.InnerIterationDirection(s->x, s->z, s->y, lambda, xi, zeta, &ws_.gz, &ws_.gy_g,
                                     &ws_.gy_f);
      s->z.noalias() -= alpha * ws_.gz;
      s->y.noalias() -= beta * ws_.gy_f;
      rows += xi.rows.n + zeta.rows.n;
    }
    const int bh_up = ScheduledBatchSize(o_.batch_scale, o_.hyper_batch_growth, t, n_up);
    const int bh_in = ScheduledBatchSize(o_.batch_scale, o_.hyper_batch_growth, t, n_in);
    const BatchView xi_t = sampler_.DrawUpper(data.upper, bh_up, &s->rng);
    const BatchView zeta_t = sampler_.DrawInner(data.inner, bh_in, &s->rng);
    rows += Hypergradient(family, s->x, s->y, s->z, lambda, xi_t, zeta_t, &ws_, report);
    const double gamma = upper_step_.Step(report->hypergradient, t, &s->aux, &s->x);
    s->lambda = NextLambda(o_, t, lambda);

    RecordStepSizes(o_, sm, lambda, StepSizes{alpha, beta, gamma}, report);
    report->z_iterations = report->y_iterations = k_steps;
    report->batch_size = b_in;
    report->hyper_batch_size = bh_in;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  AlgorithmOptions o_;
  FirstOrderWorkspace ws_;
  UpperStep upper_step_;
  RowSampler sampler_;
};

}  // namespace

int ScheduledBatchSize(double scale, double growth, int64_t t, int rows) {
  const double want = std::ceil(scale * std::pow(static_cast<double>(t), growth));
  if (!(want < static_cast<double>(rows))) return rows;
  return std::max(1, static_cast<int>(want));
}

int ScheduledInnerSteps(const AlgorithmOptions& o, int64_t t) {
  const double td = static_cast<double>(t);
  const double k =
      std::ceil(o.inner_schedule_scale *
                std::max(std::pow(td, o.beta_decay - o.tau), std::pow(td, o.alpha_decay)) *
                std::log(td + 1.0));
  if (!(k < o.max_scheduled_inner_steps)) return o.max_scheduled_inner_steps;
  return std::max(1, static_cast<int>(k));
}

namespace {

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Sf2obo(ctx));
}

// Corollary 5.2: tau = 1/6 (with a = 0, b = 1/6, B1 = B2 = 2/3, the option
// defaults), so that beta_t lambda_t = (beta / lambda_1) t^(tau - b) lambda_t
// stays bounded.
void Defaults(AlgorithmOptions* o) { o->tau = 1.0 / 6.0; }

// beta_t lambda_t = beta t^(tau - b) (lambda_1 cancels) grows without bound
// when tau > b, and the y-loop then diverges within a few hundred steps
// (Theorem 5.1 bounds beta_t lambda_t); a lambda_max cap stops the growth.
absl::Status Check(const AlgorithmOptions& o) {
  if (absl::Status s = CheckUpperStepOptions(o); !s.ok()) return s;
  if (!(o.lambda_max >= o.lambda1)) {
    return absl::InvalidArgumentError(absl::StrCat("options.lambda_max: ", o.lambda_max,
                                                   " must be >= lambda1 = ", o.lambda1,
                                                   " (inf for no cap)"));
  }
  if (o.tau > o.beta_decay && std::isinf(o.lambda_max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.tau: ", o.tau, " > beta_decay b = ", o.beta_decay,
        " makes beta_t lambda_t = beta t^(tau - b) grow without bound (Alg. 3, Theorem 5.1); "
        "set beta_decay >= tau (Corollary 5.2: tau = b = 1/6) or cap lambda with lambda_max"));
  }
  return absl::OkStatus();
}

// Paper Appendix A (online HPO): K = 5, lambda_1 = 5, tau = 1, alpha = 0.1,
// gamma = 0.001, 256-row batches.  The paper keeps b unstated; with its
// tau = 1 only b >= 1 keeps beta_t lambda_t bounded (see Check), so the
// experiment runs with b = tau = 1: beta_t lambda_t = beta, constant.
void PaperExperiment(AlgorithmOptions* o) {
  o->inner_steps = 5;
  AppendixAFirstOrder(o);
  o->beta_decay = 1.0;
}

}  // namespace

const BilevelAlgorithmEntry& Sf2oboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"sf2obo", ProblemClass::kBilevel,
       "SF2OBO (Jia & Chen, Alg. 3): seeded mini-batches B_t = ceil(t^B2), Bhat_t = ceil(t^B1)",
       PenaltyRoundOptions().Add({Opt::alpha, Opt::alpha_auto, Opt::beta, Opt::beta_auto,
                                  Opt::inner_steps, Opt::alpha_decay, Opt::beta_decay,
                                  Opt::batch_growth, Opt::hyper_batch_growth, Opt::batch_scale,
                                  Opt::inner_schedule, Opt::inner_schedule_scale,
                                  Opt::max_scheduled_inner_steps}),
       &Defaults, &Check, &PaperExperiment, /*first_order=*/true},
      &Create};
  return entry;
}

}  // namespace f2obo
