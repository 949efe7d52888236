// The bilevel class on the wire: RoundReport.bilevel, ExactMetrics.bilevel,
// RunningMetrics.bilevel, SessionInfo.bilevel, Decision's y and lambda.
#include <variant>

#include "core/bilevel/bilevel_state.h"
#include "f2obo/v1/class_wire.h"
#include "f2obo/v1/convert.h"

namespace f2obo {
namespace {

void Report(const StepReport& report, v1::RoundReport* out) {
  const BilevelReport& r = std::get<BilevelReport>(report.detail);
  v1::BilevelRoundReport* o = out->mutable_bilevel();
  o->set_lambda(r.lambda);
  o->set_alpha(r.alpha);
  o->set_beta(r.beta);
  o->set_gamma(r.gamma);
  o->set_step_sizes_auto(r.step_sizes_auto);
  o->set_l_g1(r.l_g1);
  o->set_l_f1(r.l_f1);
  o->set_smoothness_source(SmoothnessSourceToProto(r.smoothness_source));
  o->set_z_iterations(r.z_iterations);
  o->set_y_iterations(r.y_iterations);
  o->set_cap_hit(r.cap_hit);
  o->set_residual_z(r.residual_z);
  o->set_residual_y(r.residual_y);
  o->set_hypergradient_norm(r.hypergradient.norm());
  o->set_batch_size(r.batch_size);
  o->set_hyper_batch_size(r.hyper_batch_size);
}

void Metrics(const ClassMetrics& metrics, v1::ExactMetrics* out) {
  const ExactMetrics& m = std::get<ExactMetrics>(metrics);
  out->set_t(m.t);
  v1::BilevelExactMetrics* o = out->mutable_bilevel();
  o->set_regret_term(m.regret_term);
  o->set_hypergradient_error(m.hypergradient_error);
  o->set_value(m.value);
  o->set_true_gradient_norm(m.true_gradient_norm);
  o->set_inner_residual(m.inner_residual);
  if (m.variation.has_value()) o->set_variation(*m.variation);
  if (m.drift.has_value()) o->set_drift(*m.drift);
  o->set_inner_converged(m.inner_converged);
  o->set_inner_relative_residual(m.inner_relative_residual);
  o->set_cg_converged(m.cg_converged);
  o->set_cg_relative_residual(m.cg_relative_residual);
  if (m.previous_inner_converged.has_value()) {
    o->set_previous_inner_converged(*m.previous_inner_converged);
  }
}

void Running(const RunningMetrics& running, v1::RunningMetrics* out) {
  const auto sum = [&](BilevelSum i) {
    return static_cast<size_t>(i) < running.sums.size() ? running.sums[i] : 0.0;
  };
  v1::BilevelRunningMetrics* o = out->mutable_bilevel();
  o->set_blreg(sum(kBlreg));
  o->set_variation_sum(sum(kVariation));
  o->set_drift_sum(sum(kDrift));
  o->set_drift_steps(static_cast<int64_t>(sum(kDriftSteps)));
  o->set_unconverged_steps(static_cast<int64_t>(sum(kUnconvergedSteps)));
  o->set_unconverged_drift_steps(static_cast<int64_t>(sum(kUnconvergedDriftSteps)));
  SampleRunning(running, kBilevelSampleSlots, out);
}

void Info(const Problem& /*p*/, const SessionState& s, v1::SessionInfo* out) {
  const ConstBilevelVars v = BilevelView(s);
  out->mutable_bilevel()->set_lambda(v.lambda);
  out->mutable_bilevel()->set_y_dim(static_cast<int32_t>(v.y.size()));
}

void Decision(const Problem& /*p*/, const SessionState& s, v1::Decision* out) {
  const ConstBilevelVars v = BilevelView(s);
  ToRepeated(v.y, out->mutable_y());
  out->set_lambda(v.lambda);
}

}  // namespace

const ClassWire& BilevelWire() {
  static const ClassWire wire{
      ProblemClass::kBilevel, &Report, &Metrics, &Running, &Info, &Decision};
  return wire;
}

v1::SmoothnessSource SmoothnessSourceToProto(SmoothnessSource s) {
  switch (s) {
    case SmoothnessSource::kNone:
      return v1::SMOOTHNESS_SOURCE_UNSPECIFIED;
    case SmoothnessSource::kExact:
      return v1::SMOOTHNESS_SOURCE_EXACT;
    case SmoothnessSource::kBatchBound:
      return v1::SMOOTHNESS_SOURCE_BATCH_BOUND;
    case SmoothnessSource::kPowerIteration:
      return v1::SMOOTHNESS_SOURCE_POWER_ITERATION;
    case SmoothnessSource::kSecant:
      return v1::SMOOTHNESS_SOURCE_SECANT;
  }
  return v1::SMOOTHNESS_SOURCE_UNSPECIFIED;
}

}  // namespace f2obo
