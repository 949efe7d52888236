// F2OBO, paper Algorithm 1.  Per step t, from warm starts z_t, y_t:
//   for k = 1..K:                                     (lines 4-7)
//     z <- z - alpha grad_y g_t(x_t, z)
//     y <- y - beta_t (grad_y f_t(x_t, y) + lambda_t grad_y g_t(x_t, y))
//   h_t = grad_x f_t(x_t, y) + lambda_t (grad_x g_t(x_t, y) - grad_x g_t(x_t, z))
//   x_{t+1} = P_X(x_t - gamma h_t);  lambda_{t+1} = (1 + 1/t)^tau lambda_t
// The z- and y-updates at iteration k are independent given x_t, so both
// gradients of g come from one pass over the inner batch (GradYGPair).
#include "core/algorithms/f2obo.h"

#include "core/algorithms/first_order.h"

namespace f2obo {
namespace {

class F2obo final : public Algorithm {
 public:
  explicit F2obo(const AlgorithmContext& ctx)
      : name_(ctx.name), o_(ctx.options), set_(ctx.constraint),
        ws_(ctx.x_dim, ctx.y_dim) {}

  std::string_view name() const override { return name_; }

  absl::Status Round(const StepData& data, Family& family, SessionState* s,
                     StepReport* report) override {
    const double lambda = s->lambda;
    const Smoothness sm = SmoothnessIfAuto(o_, family, s->x, s->y, data);
    const StepSizes steps = DeterministicStepSizes(o_, sm, lambda);
    const double alpha = steps.alpha, beta = steps.beta;
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    int64_t rows = 0;
    for (int k = 0; k < o_.inner_steps; ++k) {
      family.GradYGPair(s->x, s->z, s->y, inner, &ws_.gz, &ws_.gy_g);
      family.F(s->x, s->y, upper, nullptr, &ws_.gy_f);
      s->z.noalias() -= alpha * ws_.gz;
      ws_.gy_f += lambda * ws_.gy_g;
      s->y.noalias() -= beta * ws_.gy_f;
      rows += inner.rows.n + upper.rows.n;
    }
    rows += Hypergradient(family, s->x, s->y, s->z, lambda, upper, inner, &ws_, report);
    ProjectedStep(set_, o_.gamma, report->hypergradient, &s->x);
    s->lambda = NextLambda(o_, s->t, lambda);

    RecordStepSizes(o_, sm, lambda, steps, report);
    report->z_iterations = report->y_iterations = o_.inner_steps;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  std::string name_;
  AlgorithmOptions o_;
  ConstraintSet set_;
  FirstOrderWorkspace ws_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Algorithm>> CreateF2obo(const AlgorithmContext& ctx) {
  return std::unique_ptr<Algorithm>(new F2obo(ctx));
}

}  // namespace f2obo
