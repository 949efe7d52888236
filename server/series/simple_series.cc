// The simple bilevel class's gaps (SPEC section 9.2), on the session's most
// recent rows: f2obo_simple_session_*.
#include "server/series/series_factories.h"

namespace f2obo::server::series {
namespace {

class SimpleSeries final : public ClassSeries {
 public:
  explicit SimpleSeries(metrics::Registry* r)
      : inner_gap_(SessionGauge(
            r, "f2obo_simple_session_inner_gap",
            "Simple bilevel: inner optimality gap g(decision) - g* at the last evaluated step.")),
        outer_gap_(SessionGauge(r, "f2obo_simple_session_outer_gap",
                                "Simple bilevel: outer gap f(decision) - f* at the last evaluated "
                                "step whose f* the family computes (may be negative: the "
                                "decision need not be inner-optimal).")),
        fw_gap_(SessionGauge(r, "f2obo_simple_session_fw_gap",
                             "Simple bilevel: Frank-Wolfe gap max_s <grad g(decision), decision - "
                             "s>, an upper bound on the inner gap (sets with an LMO).")),
        inner_gap_sum_(SessionGauge(r, "f2obo_simple_session_inner_gap_cumulative",
                                    "Simple bilevel: sum of converged inner gaps over evaluated "
                                    "steps.")),
        outer_gap_sum_(SessionGauge(r, "f2obo_simple_session_outer_gap_cumulative",
                                    "Simple bilevel: sum of outer gaps over evaluated steps with "
                                    "an f*.")),
        objective_(SessionGauge(r, "f2obo_simple_session_objective",
                                "Simple bilevel: f(decision) on the recent upper rows at the last "
                                "evaluated step.")),
        inner_objective_(SessionGauge(r, "f2obo_simple_session_inner_objective",
                                      "Simple bilevel: g(decision) on the recent inner rows at "
                                      "the last evaluated step.")) {}

  bool Handles(const v1::StepMetrics& m) const override { return m.report().has_simple(); }
  bool ExactConverged(const v1::ExactMetrics& e) const override {
    return e.simple().g_star_converged();
  }
  void Update(const Labels& id, const v1::StepMetrics& m) override {
    if (!m.has_exact()) return;
    const v1::SimpleExactMetrics& e = m.exact().simple();
    inner_gap_->WithLabels(id).Set(e.inner_gap());
    if (e.has_outer_gap()) outer_gap_->WithLabels(id).Set(e.outer_gap());
    if (e.has_fw_gap()) fw_gap_->WithLabels(id).Set(e.fw_gap());
    objective_->WithLabels(id).Set(e.f());
    inner_objective_->WithLabels(id).Set(e.g());
    inner_gap_sum_->WithLabels(id).Set(m.exact().running().simple().inner_gap_sum());
    outer_gap_sum_->WithLabels(id).Set(m.exact().running().simple().outer_gap_sum());
  }
  void Remove(const Labels& id) override {
    for (metrics::GaugeFamily* g : {inner_gap_, outer_gap_, fw_gap_, inner_gap_sum_, outer_gap_sum_,
                                    objective_, inner_objective_}) {
      g->Remove(id);
    }
  }

 private:
  metrics::GaugeFamily* inner_gap_;
  metrics::GaugeFamily* outer_gap_;
  metrics::GaugeFamily* fw_gap_;
  metrics::GaugeFamily* inner_gap_sum_;
  metrics::GaugeFamily* outer_gap_sum_;
  metrics::GaugeFamily* objective_;
  metrics::GaugeFamily* inner_objective_;
};

}  // namespace

std::unique_ptr<ClassSeries> NewSimpleSeries(metrics::Registry* r) {
  return std::make_unique<SimpleSeries>(r);
}

}  // namespace f2obo::server::series
