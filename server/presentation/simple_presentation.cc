// The simple bilevel class (SPEC section 9.2): the f2obo_simple_session_*
// optimality-gap series and the gap fields of the dashboard's steps.
#include <initializer_list>
#include <memory>

#include "server/presentation/class_presentation.h"

namespace f2obo::server::presentation {
namespace {

bool Owns(const v1::RoundReport& r) { return r.has_simple(); }

bool ExactConverged(const v1::ExactMetrics& e) { return e.simple().g_star_converged(); }

// The gaps are on the session's most recent rows.
class Series final : public ClassSeries {
 public:
  explicit Series(metrics::Registry* r)
      : inner_gap_(SessionGauge(
            r, "f2obo_simple_session_inner_gap",
            "Simple bilevel: inner optimality gap g(decision) - g* at the last evaluated step.")),
        outer_gap_(SessionGauge(
            r, "f2obo_simple_session_outer_gap",
            "Simple bilevel: outer gap f(decision) - f* at the last evaluated step whose f* the "
            "family computes (may be negative: the decision need not be inner-optimal).")),
        fw_gap_(SessionGauge(
            r, "f2obo_simple_session_fw_gap",
            "Simple bilevel: Frank-Wolfe gap max_s <grad g(decision), decision - s>, an upper "
            "bound on the inner gap (sets with an LMO).")),
        inner_gap_sum_(
            SessionGauge(r, "f2obo_simple_session_inner_gap_cumulative",
                         "Simple bilevel: sum of converged inner gaps over evaluated steps.")),
        outer_gap_sum_(SessionGauge(r, "f2obo_simple_session_outer_gap_cumulative",
                                    "Simple bilevel: sum of outer gaps over evaluated steps with "
                                    "an f*.")),
        objective_(SessionGauge(
            r, "f2obo_simple_session_objective",
            "Simple bilevel: f(decision) on the recent upper rows at the last evaluated step.")),
        inner_objective_(SessionGauge(
            r, "f2obo_simple_session_inner_objective",
            "Simple bilevel: g(decision) on the recent inner rows at the last evaluated step.")),
        estimate_(r, "f2obo_simple_session_inner_gap_cumulative",
                  "the simple bilevel session's inner-gap sum") {}

  void Update(const std::string& session, const v1::StepMetrics& m) override {
    estimate_.Update(session, m);
    if (!m.has_exact()) return;
    const std::vector<std::string> id = {session};
    const v1::SimpleExactMetrics& e = m.exact().simple();
    inner_gap_->WithLabels(id).Set(e.inner_gap());
    if (e.has_outer_gap()) outer_gap_->WithLabels(id).Set(e.outer_gap());
    if (e.has_fw_gap()) fw_gap_->WithLabels(id).Set(e.fw_gap());
    objective_->WithLabels(id).Set(e.f());
    inner_objective_->WithLabels(id).Set(e.g());
    inner_gap_sum_->WithLabels(id).Set(m.exact().running().simple().inner_gap_sum());
    outer_gap_sum_->WithLabels(id).Set(m.exact().running().simple().outer_gap_sum());
  }

  void Remove(const std::string& session) override {
    for (metrics::GaugeFamily* g : {inner_gap_, outer_gap_, fw_gap_, inner_gap_sum_, outer_gap_sum_,
                                    objective_, inner_objective_}) {
      g->Remove({session});
    }
    estimate_.Remove(session);
  }

 private:
  metrics::GaugeFamily* const inner_gap_;
  metrics::GaugeFamily* const outer_gap_;
  metrics::GaugeFamily* const fw_gap_;
  metrics::GaugeFamily* const inner_gap_sum_;
  metrics::GaugeFamily* const outer_gap_sum_;
  metrics::GaugeFamily* const objective_;
  metrics::GaugeFamily* const inner_objective_;
  EstimateSeries estimate_;
};

std::unique_ptr<ClassSeries> NewSeries(metrics::Registry* r) { return std::make_unique<Series>(r); }

void StepJson(const v1::StepMetrics& m, JsonWriter& w) {
  w.Key("inner_loss_before").Number(m.report().simple().inner_loss_before());
  if (!m.has_exact()) return;
  const v1::SimpleExactMetrics& e = m.exact().simple();
  w.Key("f")
      .Number(e.f())
      .Key("g")
      .Number(e.g())
      .Key("inner_gap")
      .Number(e.inner_gap())
      .Key("inner_gap_sum")
      .Number(m.exact().running().simple().inner_gap_sum())
      .Key("converged")
      .Bool(e.g_star_converged());
  if (e.has_fw_gap()) w.Key("fw_gap").Number(e.fw_gap());
  if (e.has_outer_gap()) w.Key("outer_gap").Number(e.outer_gap());
}

void SessionJson(const v1::SessionInfo& info, JsonWriter& w) {
  const v1::SimpleRunningMetrics& sm = info.metrics().simple();
  w.Key("inner_gap_sum")
      .Number(sm.inner_gap_sum())
      .Key("outer_gap_sum")
      .Number(sm.outer_gap_sum())
      .Key("unconverged_steps")
      .Int(sm.unconverged_steps());
}

}  // namespace

const ClassPresentation& SimplePresentation() {
  static const ClassPresentation p{
      ProblemClass::kSimpleBilevel, &Owns, &ExactConverged, &NewSeries, &StepJson, &SessionJson};
  return p;
}

}  // namespace f2obo::server::presentation
