#include "core/bilevel/algorithms/unrolled_itd_round.h"

namespace f2obo {

UnrolledItdRound::UnrolledItdRound(const BilevelAlgorithmContext& ctx, Rows rows)
    : rows_(rows),
      o_(ctx.options),
      ws_(ctx.x_dim, ctx.y_dim),
      iterates_(o_.inner_steps + 1, Vector(ctx.y_dim)),
      window_(0, o_.window, ctx.x_dim),
      // The window's slots, then the upper step's.
      upper_step_(ctx.options, ctx.constraint, ctx.x_dim, static_cast<size_t>(o_.window) + 1) {
  window_.AppendLayout(&aux_layout_);
}

std::vector<int> UnrolledItdRound::AuxLayout() const {
  std::vector<int> sizes = aux_layout_;
  upper_step_.AppendLayout(&sizes);
  return sizes;
}

BatchView UnrolledItdRound::Inner(const Batch& inner, Rng* rng) {
  if (rows_ == Rows::kWholeBatch) return BatchView::All(inner);
  return sampler_.DrawInner(inner, o_.sample_rows, rng);
}

BatchView UnrolledItdRound::Upper(const Batch& upper, Rng* rng) {
  if (rows_ == Rows::kWholeBatch) return BatchView::All(upper);
  return sampler_.DrawUpper(upper, o_.sample_rows, rng);
}

absl::Status UnrolledItdRound::Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                                     BilevelReport* report) {
  const int k_steps = o_.inner_steps;
  const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
  if (rows_ == Rows::kMiniBatches) sampler_.Reserve(data);
  int64_t rows = 0;
  iterates_[0] = s->y;
  for (int k = 0; k < k_steps; ++k) {
    if (absl::Status st = ContinueRound(); !st.ok()) return st;
    const BatchView zeta_k = Inner(data.inner, &s->rng);
    family.G(s->x, iterates_[k], zeta_k, nullptr, &ws_.gy_g);
    iterates_[k + 1].noalias() = iterates_[k] - alpha * ws_.gy_g;
    rows += zeta_k.rows.n;
  }
  // The backward pass reads its own rows (for SOBBO fresh draws, xi before
  // zeta; for OBBO the whole batch again).
  const BatchView xi = Upper(data.upper, &s->rng);
  const BatchView zeta = Inner(data.inner, &s->rng);
  absl::StatusOr<int64_t> hypergradient_rows =
      ItdHypergradient(family, s->x, iterates_, k_steps, alpha, xi, zeta, &ws_, round_control());
  if (!hypergradient_rows.ok()) return hypergradient_rows.status();
  rows += *hypergradient_rows;
  rows += ResidualY(family, s->x, iterates_[k_steps], zeta, &ws_, report);
  s->y = iterates_[k_steps];
  EnsureAux(aux_layout_, s);
  window_.PushAndAverage(ws_.h, &s->aux, &ws_.d);
  report->gamma = upper_step_.Step(ws_.d, s->t, &s->aux, &s->x);

  report->hypergradient = ws_.h;
  report->y_iterations = k_steps;
  if (rows_ == Rows::kMiniBatches) report->batch_size = report->hyper_batch_size = zeta.rows.n;
  report->rows_processed = rows;
  return absl::OkStatus();
}

}  // namespace f2obo
