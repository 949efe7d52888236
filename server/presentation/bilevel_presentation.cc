// The bilevel class (x, y, z, lambda; SPEC sections 2-5): the f2obo_session_*
// hypergradient series and the regret, drift and convergence fields of the
// dashboard's steps.
#include <initializer_list>
#include <memory>

#include "server/presentation/class_presentation.h"

namespace f2obo::server::presentation {
namespace {

bool Owns(const v1::RoundReport& r) { return r.has_bilevel(); }

bool ExactConverged(const v1::ExactMetrics& m) {
  const v1::BilevelExactMetrics& e = m.bilevel();
  return e.inner_converged() && e.cg_converged() &&
         (!e.has_previous_inner_converged() || e.previous_inner_converged());
}

class Series final : public ClassSeries {
 public:
  explicit Series(metrics::Registry* r)
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
        value_(SessionGauge(r, "f2obo_session_objective", "F_t(x_t) at the last evaluated step.")),
        // The round's own figures, on every step (an oracle session, which
        // has no exact metrics, is watched through these).
        alpha_(SessionGauge(r, "f2obo_session_alpha", "z-step size alpha of the last round.")),
        beta_(SessionGauge(r, "f2obo_session_beta", "y-step size beta_t of the last round.")),
        gamma_(
            SessionGauge(r, "f2obo_session_gamma", "Upper step size gamma_t of the last round.")),
        residual_z_(SessionGauge(r, "f2obo_session_residual_z",
                                 "||grad_y g_t(x_t, z_{t+1})|| after the last round's z loop.")),
        residual_y_(
            SessionGauge(r, "f2obo_session_residual_y",
                         "||grad_y L(x_t, y_{t+1}, lambda_t)|| after the last round's y loop.")),
        hypergradient_norm_(SessionGauge(r, "f2obo_session_hypergradient_norm",
                                         "||h_t||, the last round's hypergradient estimate.")),
        estimate_(r, "f2obo_session_blreg", "BLReg") {}

  void Update(const std::string& session, const v1::StepMetrics& m) override {
    const std::vector<std::string> id = {session};
    const v1::BilevelRoundReport& r = m.report().bilevel();
    lambda_->WithLabels(id).Set(r.lambda());
    inner_iterations_->WithLabels(id).Set(r.z_iterations() + r.y_iterations());
    alpha_->WithLabels(id).Set(r.alpha());
    beta_->WithLabels(id).Set(r.beta());
    gamma_->WithLabels(id).Set(r.gamma());
    residual_z_->WithLabels(id).Set(r.residual_z());
    residual_y_->WithLabels(id).Set(r.residual_y());
    hypergradient_norm_->WithLabels(id).Set(r.hypergradient_norm());
    estimate_.Update(session, m);
    if (!m.has_exact()) return;
    const v1::BilevelExactMetrics& e = m.exact().bilevel();
    const v1::BilevelRunningMetrics& running = m.exact().running().bilevel();
    blreg_->WithLabels(id).Set(running.blreg());
    regret_term_->WithLabels(id).Set(e.regret_term());
    hypergradient_error_->WithLabels(id).Set(e.hypergradient_error());
    variation_->WithLabels(id).Set(running.variation_sum());
    drift_->WithLabels(id).Set(running.drift_sum());
    value_->WithLabels(id).Set(e.value());
  }

  void Remove(const std::string& session) override {
    for (metrics::GaugeFamily* g : {blreg_, regret_term_, hypergradient_error_, variation_, drift_,
                                    lambda_, inner_iterations_, value_, alpha_, beta_, gamma_,
                                    residual_z_, residual_y_, hypergradient_norm_}) {
      g->Remove({session});
    }
    estimate_.Remove(session);
  }

 private:
  metrics::GaugeFamily* const blreg_;
  metrics::GaugeFamily* const regret_term_;
  metrics::GaugeFamily* const hypergradient_error_;
  metrics::GaugeFamily* const variation_;
  metrics::GaugeFamily* const drift_;
  metrics::GaugeFamily* const lambda_;
  metrics::GaugeFamily* const inner_iterations_;
  metrics::GaugeFamily* const value_;
  metrics::GaugeFamily* const alpha_;
  metrics::GaugeFamily* const beta_;
  metrics::GaugeFamily* const gamma_;
  metrics::GaugeFamily* const residual_z_;
  metrics::GaugeFamily* const residual_y_;
  metrics::GaugeFamily* const hypergradient_norm_;
  EstimateSeries estimate_;
};

std::unique_ptr<ClassSeries> NewSeries(metrics::Registry* r) { return std::make_unique<Series>(r); }

void StepJson(const v1::StepMetrics& m, JsonWriter& w) {
  const v1::BilevelRoundReport& r = m.report().bilevel();
  if (r.cap_hit()) w.Key("cap_hit").Bool(true);
  w.Key("lambda")
      .Number(r.lambda())
      .Key("z_iterations")
      .Int(r.z_iterations())
      .Key("y_iterations")
      .Int(r.y_iterations())
      .Key("gamma")
      .Number(r.gamma())
      .Key("residual_z")
      .Number(r.residual_z())
      .Key("residual_y")
      .Number(r.residual_y())
      .Key("hypergradient_norm")
      .Number(r.hypergradient_norm());
  if (!m.has_exact()) return;
  const v1::BilevelExactMetrics& e = m.exact().bilevel();
  const v1::BilevelRunningMetrics& running = m.exact().running().bilevel();
  w.Key("regret_term")
      .Number(e.regret_term())
      .Key("blreg")
      .Number(running.blreg())
      .Key("hypergradient_error")
      .Number(e.hypergradient_error())
      .Key("value")
      .Number(e.value());
  if (e.has_variation()) w.Key("variation").Number(e.variation());
  if (e.has_drift()) w.Key("drift").Number(e.drift());
  w.Key("variation_sum")
      .Number(running.variation_sum())
      .Key("drift_sum")
      .Number(running.drift_sum())
      .Key("converged")
      .Bool(ExactConverged(m.exact()));
}

void SessionJson(const v1::SessionInfo& info, JsonWriter& w) {
  const v1::BilevelRunningMetrics& running = info.metrics().bilevel();
  w.Key("lambda")
      .Number(info.bilevel().lambda())
      .Key("y_dim")
      .Int(info.bilevel().y_dim())
      .Key("blreg")
      .Number(running.blreg())
      .Key("variation_sum")
      .Number(running.variation_sum())
      .Key("drift_sum")
      .Number(running.drift_sum())
      .Key("unconverged_steps")
      .Int(running.unconverged_steps());
}

}  // namespace

const ClassPresentation& BilevelPresentation() {
  static const ClassPresentation p{
      ProblemClass::kBilevel, &Owns, &ExactConverged, &NewSeries, &StepJson, &SessionJson};
  return p;
}

}  // namespace f2obo::server::presentation
