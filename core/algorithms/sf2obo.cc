// SF2OBO, paper Algorithm 3.  Per step t, from warm starts z_t, y_t:
//   for k = 1..K_t:                                               (lines 4-8)
//     draw xi (B_t upper rows) and zeta (B_t inner rows)
//     z <- z - alpha_t grad_y g_t(x_t, z; zeta)
//     y <- y - beta_t (grad_y f_t(x_t, y; xi) + lambda_t grad_y g_t(x_t, y; zeta))
//   draw xi_t, zeta_t of Bhat_t rows                              (line 9)
//   h_t = grad_x f(x_t, y; xi_t) + lambda_t (grad_x g(x_t, y; zeta_t)
//         - grad_x g(x_t, z; zeta_t))                              (line 10)
//   x_{t+1} = P_X(x_t - gamma h_t); lambda_{t+1} = (1 + 1/t)^tau lambda_t
// with alpha_t = alpha / t^a, beta_t = beta / (lambda_1 t^b), B_t = ceil(t^B2),
// Bhat_t = ceil(t^B1) (Theorem 5.1), sizes capped at the batch's rows.
//
// Draws are without replacement within a mini-batch, from the session RNG;
// a draw that would take every row uses the whole batch and consumes no
// randomness.  Families without sample rows (quadratic) are used whole.
#include "core/algorithms/sf2obo.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/algorithms/first_order.h"

namespace f2obo {
namespace {

class Sf2obo final : public Algorithm {
 public:
  explicit Sf2obo(const AlgorithmContext& ctx)
      : o_(ctx.options), set_(ctx.constraint), ws_(ctx.x_dim, ctx.y_dim) {}

  std::string_view name() const override { return "sf2obo"; }

  absl::Status Round(const StepData& data, Family& family, SessionState* s,
                     StepReport* report) override {
    const int64_t t = s->t;
    const double td = static_cast<double>(t);
    const double lambda = s->lambda;
    const Smoothness sm = SmoothnessIfAuto(o_, family, s->x, s->y, data);
    const double alpha =
        (o_.alpha_auto ? 1.0 / sm.l_g1 : o_.alpha) / std::pow(td, o_.alpha_decay);
    const double beta =
        (o_.beta_auto ? 1.0 / (2.0 * o_.lambda1 * sm.l_g1 + sm.l_f1)
                      : o_.beta / o_.lambda1) /
        std::pow(td, o_.beta_decay);
    const int n_up = data.upper.rows(), n_in = data.inner.rows();
    const int b_up = ScheduledBatchSize(o_.batch_scale, o_.batch_growth, t, n_up);
    const int b_in = ScheduledBatchSize(o_.batch_scale, o_.batch_growth, t, n_in);
    const int k_steps = o_.inner_schedule == InnerSchedule::kFixed
                            ? o_.inner_steps
                            : ScheduledInnerSteps(o_, t);
    Reserve(n_up, n_in);
    int64_t rows = 0;
    for (int k = 0; k < k_steps; ++k) {
      const BatchView xi = Draw(data.upper, b_up, &s->rng, up_idx_.data());
      const BatchView zeta = Draw(data.inner, b_in, &s->rng, in_idx_.data());
      family.GradYGPair(s->x, s->z, s->y, zeta, &ws_.gz, &ws_.gy_g);
      family.F(s->x, s->y, xi, nullptr, &ws_.gy_f);
      s->z.noalias() -= alpha * ws_.gz;
      ws_.gy_f += lambda * ws_.gy_g;
      s->y.noalias() -= beta * ws_.gy_f;
      rows += xi.rows.n + zeta.rows.n;
    }
    const int bh_up = ScheduledBatchSize(o_.batch_scale, o_.hyper_batch_growth, t, n_up);
    const int bh_in = ScheduledBatchSize(o_.batch_scale, o_.hyper_batch_growth, t, n_in);
    const BatchView xi_t = Draw(data.upper, bh_up, &s->rng, up_idx_.data());
    const BatchView zeta_t = Draw(data.inner, bh_in, &s->rng, in_idx_.data());
    rows += Hypergradient(family, s->x, s->y, s->z, lambda, xi_t, zeta_t, &ws_, report);
    ProjectedStep(set_, o_.gamma, report->hypergradient, &s->x);
    s->lambda = NextLambda(o_, t, lambda);

    RecordStepSizes(o_, sm, lambda, StepSizes{alpha, beta}, report);
    report->z_iterations = report->y_iterations = k_steps;
    report->batch_size = b_in;
    report->hyper_batch_size = bh_in;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  // Grows the index buffers to the step's batch sizes (once per round, never
  // inside the inner loop).
  void Reserve(int n_up, int n_in) {
    const size_t need = static_cast<size_t>(std::max(n_up, n_in));
    if (perm_.size() < need) perm_.resize(need);
    if (up_idx_.size() < static_cast<size_t>(n_up)) up_idx_.resize(n_up);
    if (in_idx_.size() < static_cast<size_t>(n_in)) in_idx_.resize(n_in);
  }

  BatchView Draw(const Batch& b, int k, Rng* rng, int* idx) {
    const int n = b.rows();
    if (k >= n) return BatchView::All(b);
    rng->SampleWithoutReplacement(n, k, perm_.data(), idx);
    return BatchView{&b, RowSet{idx, k}};
  }

  AlgorithmOptions o_;
  ConstraintSet set_;
  FirstOrderWorkspace ws_;
  std::vector<int> perm_, up_idx_, in_idx_;
};

}  // namespace

int ScheduledBatchSize(double scale, double growth, int64_t t, int rows) {
  const double want = std::ceil(scale * std::pow(static_cast<double>(t), growth));
  if (!(want < static_cast<double>(rows))) return rows;
  return std::max(1, static_cast<int>(want));
}

int ScheduledInnerSteps(const AlgorithmOptions& o, int64_t t) {
  const double td = static_cast<double>(t);
  const double k = std::ceil(o.inner_schedule_scale *
                             std::max(std::pow(td, o.beta_decay - o.tau),
                                      std::pow(td, o.alpha_decay)) *
                             std::log(td + 1.0));
  if (!(k < o.max_scheduled_inner_steps)) return o.max_scheduled_inner_steps;
  return std::max(1, static_cast<int>(k));
}

absl::StatusOr<std::unique_ptr<Algorithm>> CreateSf2obo(const AlgorithmContext& ctx) {
  return std::unique_ptr<Algorithm>(new Sf2obo(ctx));
}

}  // namespace f2obo
