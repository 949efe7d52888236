#include "core/bilevel/algorithms/aid_baseline.h"

#include "core/bilevel/hypergradients/first_order.h"

namespace f2obo {

AidBaseline::AidBaseline(const BilevelAlgorithmContext& ctx, const std::vector<int>& extra_aux)
    : o_(ctx.options),
      ws_(ctx.x_dim, ctx.y_dim),
      aux_layout_{ctx.y_dim},
      upper_step_(ctx.options, ctx.constraint, ctx.x_dim, 1 + extra_aux.size()) {
  aux_layout_.insert(aux_layout_.end(), extra_aux.begin(), extra_aux.end());
}

std::vector<int> AidBaseline::AuxLayout() const {
  std::vector<int> sizes = aux_layout_;
  upper_step_.AppendLayout(&sizes);
  return sizes;
}

absl::Status AidBaseline::Hypergradient(BilevelFamily& family, BilevelVars* s,
                                        const BatchView& upper, const BatchView& inner, int steps,
                                        int64_t* rows, bool* first) {
  const bool created = EnsureAux(aux_layout_, s);
  if (first != nullptr) *first = created;
  absl::StatusOr<int64_t> hypergradient_rows =
      AidHypergradient(family, s->x, s->y, upper, inner, steps, o_.linear_system_step, &s->aux[0],
                       &ws_, round_control());
  if (!hypergradient_rows.ok()) return hypergradient_rows.status();
  *rows += *hypergradient_rows;
  return absl::OkStatus();
}

void AidBaseline::StepAndReport(const Vector& direction, int y_iterations, int64_t rows,
                                BilevelVars* s, BilevelReport* report) {
  report->gamma = upper_step_.Step(direction, s->t, &s->aux, &s->x);
  report->hypergradient = ws_.h;
  report->y_iterations = y_iterations;
  report->rows_processed = rows;
}

}  // namespace f2obo
