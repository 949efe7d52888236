// The simple bilevel class on the wire: RoundReport.simple,
// ExactMetrics.simple, RunningMetrics.simple, SessionInfo.simple (empty: the
// class's x is SessionInfo.x_dim) and Decision.iterate (the decision itself
// is Decision.x, as for every class).
#include <variant>

#include "core/simple/simple_state.h"
#include "f2obo/v1/class_wire.h"
#include "f2obo/v1/convert.h"

namespace f2obo {
namespace {

void Report(const StepReport& report, v1::RoundReport* out) {
  const SimpleReport& r = std::get<SimpleReport>(report.detail);
  v1::SimpleRoundReport* o = out->mutable_simple();
  o->set_inner_loss_before(r.inner_loss_before);
  o->set_alpha(r.alpha);
  o->set_sigma(r.sigma);
  o->set_fw_gap_estimate(r.fw_gap_estimate);
  o->set_g_level(r.g_level);
  o->set_l_f(r.l_f);
  o->set_l_g(r.l_g);
  o->set_smoothness_source(SmoothnessSourceToProto(r.smoothness_source));
  o->set_window_upper_rows(r.window_upper_rows);
  o->set_window_inner_rows(r.window_inner_rows);
  o->set_full_pass(r.full_pass);
  o->set_oracle_seconds(r.oracle_seconds);
}

void Metrics(const ClassMetrics& metrics, v1::ExactMetrics* out) {
  const SimpleMetrics& m = std::get<SimpleMetrics>(metrics);
  out->set_t(m.t);
  v1::SimpleExactMetrics* o = out->mutable_simple();
  o->set_f(m.f);
  o->set_g(m.g);
  o->set_g_star(m.g_star);
  o->set_inner_gap(m.inner_gap);
  o->set_g_star_converged(m.g_star_converged);
  if (m.fw_gap.has_value()) o->set_fw_gap(*m.fw_gap);
  if (m.f_star.has_value()) o->set_f_star(*m.f_star);
  if (m.outer_gap.has_value()) o->set_outer_gap(*m.outer_gap);
  o->set_window_upper_rows(m.window_upper_rows);
  o->set_window_inner_rows(m.window_inner_rows);
}

void Running(const RunningMetrics& running, v1::RunningMetrics* out) {
  const auto sum = [&](SimpleSum i) {
    return static_cast<size_t>(i) < running.sums.size() ? running.sums[i] : 0.0;
  };
  v1::SimpleRunningMetrics* o = out->mutable_simple();
  o->set_inner_gap_sum(sum(kSimpleInnerGap));
  o->set_outer_gap_sum(sum(kSimpleOuterGap));
  // Counts are whole numbers in [0, evaluated_steps] (Session::Restore).
  o->set_outer_gap_steps(static_cast<int64_t>(sum(kSimpleOuterGapSteps)));
  o->set_unconverged_steps(static_cast<int64_t>(sum(kSimpleUnconvergedSteps)));
  SampleRunning(running, kSimpleSampleSlots, out);
}

void Info(const Problem& /*p*/, const SessionState& /*s*/, v1::SessionInfo* out) {
  out->mutable_simple();
}

void Decision(const Problem& /*p*/, const SessionState& s, v1::Decision* out) {
  ToRepeated(s.x, out->mutable_iterate());
}

}  // namespace

const ClassWire& SimpleWire() {
  static const ClassWire wire{
      ProblemClass::kSimpleBilevel, &Report, &Metrics, &Running, &Info, &Decision};
  return wire;
}

}  // namespace f2obo
