#include "core/simple/simple_metrics_evaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/simple/simple_state.h"

namespace f2obo {

SimpleMetricsEvaluator::SimpleMetricsEvaluator(std::unique_ptr<SimpleFamily> family,
                                               ConstraintSet set, int cols, int window_rows)
    : family_(std::move(family)),
      set_(std::move(set)),
      upper_(window_rows, cols),
      inner_(window_rows, cols) {}

void SimpleMetricsEvaluator::Observe(const StepData& data) {
  if (family_->upper_reads_rows() && data.upper.rows() > 0) upper_.Append(data.upper);
  if (data.inner.rows() > 0) inner_.Append(data.inner);
}

absl::StatusOr<ClassMetrics> SimpleMetricsEvaluator::Evaluate(const SessionState& before,
                                                              const StepReport& /*report*/,
                                                              const StepData& /*current*/,
                                                              const StepData* /*previous*/) {
  absl::StatusOr<SimpleMetrics> m = Measure(before.t, before.vectors[kSimpleDecision]);
  if (!m.ok()) return m.status();
  return ClassMetrics(*std::move(m));
}

absl::StatusOr<SimpleMetrics> SimpleMetricsEvaluator::Measure(int64_t t, const VecIn& decision) {
  SimpleMetrics m;
  m.t = t;
  m.window_upper_rows = upper_.size();
  m.window_inner_rows = inner_.size();
  if (inner_.size() == 0) {
    return absl::FailedPreconditionError("simple metrics: no inner rows observed yet");
  }
  const BatchView inner = inner_.view();
  const Batch empty;
  const BatchView upper = family_->upper_reads_rows() ? upper_.view() : BatchView::All(empty);
  m.f = family_->F(decision, upper, nullptr);
  Vector grad;
  m.g = family_->G(decision, inner, &grad);
  if (set_.HasLmo()) {
    Vector s;
    m.fw_gap = FrankWolfeGap(set_, decision, grad, &s);
  }
  InnerSolveResult solve = last_minimizer_.size() == decision.size()
                               ? MinimizeG(*family_, inner, set_, last_minimizer_)
                               : MinimizeG(*family_, inner, set_, decision);
  // g* is a minimum: the decision itself (in Z) bounds it from above.
  m.g_star = std::min(solve.g, m.g);
  m.inner_gap = m.g - m.g_star;
  m.g_star_converged = solve.converged;
  last_minimizer_ = std::move(solve.z);
  m.f_star = family_->OuterOptimum(upper, inner, set_);
  if (m.f_star.has_value()) m.outer_gap = m.f - *m.f_star;
  for (double v :
       {m.f, m.g, m.g_star, m.inner_gap, m.fw_gap.value_or(0.0), m.f_star.value_or(0.0)}) {
    if (!std::isfinite(v)) {
      return absl::InternalError(absl::StrCat("simple metrics at step ", t, ": not finite"));
    }
  }
  return m;
}

void AccumulateSimple(const SimpleMetrics& m, RunningMetrics* r, double probability) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (r->evaluated_steps < kMax) ++r->evaluated_steps;
  if (r->sums.size() < kSimpleSumCount) r->sums.resize(kSimpleSumCount, 0.0);
  std::vector<double>& sum = r->sums;
  AddSampledTerm(m.g_star_converged ? std::optional<double>(m.inner_gap) : std::nullopt,
                 probability, kSimpleSampleSlots, r);
  if (!m.g_star_converged) {
    sum[kSimpleUnconvergedSteps] += 1.0;
    return;
  }
  sum[kSimpleInnerGap] += m.inner_gap;
  if (m.outer_gap.has_value()) {
    sum[kSimpleOuterGap] += *m.outer_gap;
    sum[kSimpleOuterGapSteps] += 1.0;
  }
}

}  // namespace f2obo
