#include "server/series/hypergradient_gauges.h"

namespace f2obo::server::series {

HypergradientGauges::HypergradientGauges(metrics::Registry* r)
    : blreg_(SessionGauge(r, "f2obo_session_blreg",
                          "Cumulative local regret BLReg(t) over evaluated steps (Eq. 2).")),
      regret_term_(SessionGauge(r, "f2obo_session_regret_term",
                                "Last local-regret term ||G_X(x_t, grad F_t(x_t), gamma)||^2.")),
      hypergradient_error_(
          SessionGauge(r, "f2obo_session_hypergradient_error",
                       "Last ||h_t - grad F_t(x_t)||, the algorithm's hypergradient error.")),
      variation_(
          SessionGauge(r, "f2obo_session_variation_estimate",
                       "Running sum of |F_t(x_t) - F_{t-1}(x_t)|: trajectory estimate of V_T.")),
      drift_(SessionGauge(
          r, "f2obo_session_drift_estimate",
          "Running sum of ||y*_t(x_t) - y*_{t-1}(x_t)||^2: trajectory estimate of H_2,T.")),
      lambda_(SessionGauge(r, "f2obo_session_lambda", "Multiplier lambda_t of the last round.")),
      inner_iterations_(SessionGauge(r, "f2obo_session_inner_iterations",
                                     "Inner gradient steps (z plus y) of the last round.")),
      value_(SessionGauge(r, "f2obo_session_objective", "F_t(x_t) at the last evaluated step.")) {}

void HypergradientGauges::Update(const Labels& id, const v1::StepMetrics& m) {
  const v1::RoundReport& r = m.report();
  lambda_->WithLabels(id).Set(r.lambda());
  inner_iterations_->WithLabels(id).Set(r.z_iterations() + r.y_iterations());
  if (!m.has_exact()) return;
  const v1::ExactMetrics& e = m.exact();
  blreg_->WithLabels(id).Set(e.running().blreg());
  regret_term_->WithLabels(id).Set(e.regret_term());
  hypergradient_error_->WithLabels(id).Set(e.hypergradient_error());
  variation_->WithLabels(id).Set(e.running().variation_sum());
  drift_->WithLabels(id).Set(e.running().drift_sum());
  value_->WithLabels(id).Set(e.value());
}

void HypergradientGauges::Remove(const Labels& id) {
  for (metrics::GaugeFamily* g : {blreg_, regret_term_, hypergradient_error_, variation_, drift_,
                                  lambda_, inner_iterations_, value_}) {
    g->Remove(id);
  }
}

bool HypergradientGauges::Converged(const v1::ExactMetrics& e) {
  return e.inner_converged() && e.cg_converged() &&
         (!e.has_previous_inner_converged() || e.previous_inner_converged());
}

}  // namespace f2obo::server::series
