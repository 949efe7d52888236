// F2OBO, paper Algorithm 1.  Per step t, from warm starts z_t, y_t:
//   for k = 1..K:                                     (lines 4-7)
//     z <- z - alpha grad_y g_t(x_t, z)
//     y <- y - beta_t (grad_y f_t(x_t, y) + lambda_t grad_y g_t(x_t, y))
//   h_t = grad_x f_t(x_t, y) + lambda_t (grad_x g_t(x_t, y) - grad_x g_t(x_t, z))
//   x_{t+1} = P_X(x_t - gamma_t h_t);  lambda_{t+1} = (1 + 1/t)^tau lambda_t
// (lambda_schedule = paper; the default, follow, applies that factor only
// while the inner loops keep up and (1 + 1/t)^(tau/2) otherwise:
// NextLambdaFollowing in core/bilevel/hypergradients/first_order.h argues it from
// Theorem 3.1's bias and error terms)
// gamma_t = gamma (the paper's experiments) or, with gamma_schedule =
// theory, gamma t^-tau (Theorem 3.2's rate for F2OBO-SL).
// The z- and y-updates at iteration k are independent given x_t, so both
// gradients of g come from one pass over the inner batch (GradYGPair).
// Automatic alpha, beta through a family without HVPs (the oracle family):
// the secant rule of core/bilevel/hypergradients/secant_steps.h, its state in the
// first aux part.
#include "core/bilevel/algorithms/f2obo.h"

#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/secant_steps.h"
#include "core/bilevel/hypergradients/upper_step.h"

namespace f2obo {
namespace {

class F2obo final : public BilevelAlgorithm {
 public:
  explicit F2obo(const BilevelAlgorithmContext& ctx)
      : o_(ctx.options),
        ws_(ctx.x_dim, ctx.y_dim),
        secant_(ctx.secant_steps),
        sws_(secant_ ? ctx.y_dim : 0),
        upper_step_(ctx.options, ctx.constraint, ctx.x_dim, /*slot=*/secant_ ? 1 : 0) {}

  std::vector<int> AuxLayout() const override {
    std::vector<int> sizes;
    if (secant_) sizes.push_back(kSecantParts);
    upper_step_.AppendLayout(&sizes);
    return sizes;
  }

  void ReleaseScratch() override {
    ws_.Release();
    sws_.Release();
  }

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    ws_.Ensure();
    if (secant_) {
      sws_.Ensure();
      return SecantRound(data, family, s, report);
    }
    const double lambda = s->lambda;
    const Smoothness sm = SmoothnessIfAuto(o_, family, s->x, s->y, data);
    StepSizes steps = DeterministicStepSizes(o_, sm, lambda, s->t);
    const double alpha = steps.alpha, beta = steps.beta;
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    absl::StatusOr<int64_t> inner_rows =
        PenaltyInnerLoops(family, s->x, alpha, beta, lambda, o_.inner_steps, upper, inner, &s->y,
                          &s->z, &ws_, round_control());
    if (!inner_rows.ok()) return inner_rows.status();
    int64_t rows = *inner_rows;
    rows += Hypergradient(family, s->x, s->y, s->z, lambda, upper, inner, &ws_, report,
                          MeasuresGradYF(o_));
    steps.gamma = upper_step_.Step(report->hypergradient, s->t, &s->aux, &s->x);
    s->lambda = NextLambdaFollowing(o_, s->t, lambda, *report);

    RecordStepSizes(o_, sm, lambda, steps, report);
    report->z_iterations = report->y_iterations = o_.inner_steps;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  absl::Status SecantRound(const StepData& data, BilevelFamily& family, BilevelVars* s,
                           BilevelReport* report) {
    const double lambda = s->lambda;
    SecantSteps rule(s->aux.size() > 0 ? s->aux[0] : Vector());
    StepSizes steps;
    absl::StatusOr<int64_t> rows =
        SecantRoundLoops(family, s->x, lambda, o_.inner_steps, BatchView::All(data.upper),
                         BatchView::All(data.inner), &s->y, &s->z, &ws_, &sws_, &rule, &steps,
                         report, round_control(), MeasuresGradYF(o_));
    if (!rows.ok()) return rows.status();
    if (s->aux.empty()) {
      s->aux.push_back(rule.Part());
    } else {
      s->aux.Set(0, rule.Part());
    }
    steps.gamma = upper_step_.Step(report->hypergradient, s->t, &s->aux, &s->x);
    s->lambda = NextLambdaFollowing(o_, s->t, lambda, *report);
    RecordStepSizes(o_, rule.Estimate(lambda), lambda, steps, report);
    report->z_iterations = report->y_iterations = o_.inner_steps;
    report->rows_processed = *rows;
    return absl::OkStatus();
  }

  AlgorithmOptions o_;
  FirstOrderWorkspace ws_;
  const bool secant_;
  SecantWorkspace sws_;
  UpperStep upper_step_;
};

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new F2obo(ctx));
}

OptionSet Reads() {
  return PenaltyRoundOptions().Add({Opt::alpha, Opt::alpha_auto, Opt::beta, Opt::beta_auto,
                                    Opt::beta_scaling, Opt::inner_steps, Opt::lambda_schedule});
}

// F2OBO-SL is single-loop: K = 1, and Theorem 3.2 needs tau in (0, 1/2);
// its Eq. (8) takes tau = 1/3.
void SingleLoopDefaults(AlgorithmOptions* o) {
  o->inner_steps = 1;
  o->tau = 1.0 / 3.0;
}

absl::Status SingleLoopCheck(const AlgorithmOptions& o) {
  if (o.inner_steps != 1) {
    return absl::InvalidArgumentError("options.inner_steps: f2obo_sl is single-loop, K must be 1");
  }
  return CheckPenaltyOptions(o);
}

// Paper Appendix A (the loss-tuning experiment; F2OBO-SL is not run there): K = 5, lambda_1 = 5,
// tau = 1, alpha = 0.1, gamma = 0.001 (the generic defaults).
void PaperExperiment(AlgorithmOptions* o) {
  o->inner_steps = 5;
  o->lambda_schedule = LambdaSchedule::kPaper;
  AppendixAFirstOrder(o);
}

}  // namespace

const BilevelAlgorithmEntry& F2oboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"f2obo", ProblemClass::kBilevel,
       "F2OBO (Jia & Chen, Alg. 1): K gradient steps on z and y, penalty hypergradient", Reads(),
       nullptr, &CheckPenaltyOptions, &PaperExperiment, /*first_order=*/true,
       /*keeps_rows=*/false, /*secant_steps=*/true},
      &Create};
  return entry;
}

const BilevelAlgorithmEntry& F2oboSlAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"f2obo_sl", ProblemClass::kBilevel,
       "F2OBO-SL (Jia & Chen, Alg. 1 with K = 1, Theorem 3.2): single loop, tau = 1/3", Reads(),
       &SingleLoopDefaults, &SingleLoopCheck, nullptr, /*first_order=*/true,
       /*keeps_rows=*/false, /*secant_steps=*/true},
      &Create};
  return entry;
}

}  // namespace f2obo
