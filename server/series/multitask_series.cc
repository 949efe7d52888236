// The multi-task class (m lower-level problems sharing x): the
// hypergradient figures of F = mean of the tasks seen (the proto's
// ExactMetrics for multitask_bilevel sessions), and its own
// f2obo_multitask_session_* series.  Deliberately no per-task series: a
// label per task would make the series set grow with m (up to
// --max_tasks = 10,000 per session); per-task figures are in WatchMetrics.
#include "server/series/series_factories.h"

namespace f2obo::server::series {
namespace {

class MultitaskSeries final : public ClassSeries {
 public:
  MultitaskSeries(metrics::Registry* r, std::shared_ptr<HypergradientGauges> gauges)
      : gauges_(std::move(gauges)),
        tasks_touched_(SessionGauge(r, "f2obo_multitask_session_tasks_touched",
                                    "Multi-task: tasks holding state after the last round "
                                    "(memory grows with these, not with m).")),
        step_tasks_(SessionGauge(r, "f2obo_multitask_session_step_tasks",
                                 "Multi-task: tasks the last step carried.")),
        gradient_norm_(SessionGauge(r, "f2obo_multitask_session_gradient_norm",
                                    "Multi-task: ||grad F(x_t)|| of F = mean over the tasks seen "
                                    "(exact, at the last evaluated step).")),
        tasks_evaluated_(SessionGauge(r, "f2obo_multitask_session_tasks_evaluated",
                                      "Multi-task: tasks F was averaged over at the last "
                                      "evaluated step (the most recently seen, at most 256).")),
        unconverged_tasks_(SessionGauge(r, "f2obo_multitask_session_unconverged_tasks",
                                        "Multi-task: tasks whose inner or CG solve did not "
                                        "converge at the last evaluated step.")),
        exact_seconds_(SessionGauge(r, "f2obo_multitask_session_exact_seconds",
                                    "Multi-task: what the last exact metrics cost the metrics "
                                    "worker, in seconds.")) {}

  bool Handles(const v1::StepMetrics& m) const override { return m.report().has_multitask(); }
  bool ExactConverged(const v1::ExactMetrics& e) const override {
    return HypergradientGauges::Converged(e);
  }
  void Update(const Labels& id, const v1::StepMetrics& m) override {
    gauges_->Update(id, m);
    const v1::MultitaskRoundReport& r = m.report().multitask();
    tasks_touched_->WithLabels(id).Set(static_cast<double>(r.tasks_touched()));
    step_tasks_->WithLabels(id).Set(r.tasks());
    if (!m.has_exact()) return;
    const v1::ExactMetrics& e = m.exact();
    gradient_norm_->WithLabels(id).Set(e.true_gradient_norm());
    tasks_evaluated_->WithLabels(id).Set(e.multitask().tasks_evaluated());
    unconverged_tasks_->WithLabels(id).Set(e.multitask().unconverged_tasks());
    exact_seconds_->WithLabels(id).Set(e.multitask().seconds());
  }
  void Remove(const Labels& id) override {
    gauges_->Remove(id);
    for (metrics::GaugeFamily* g : {tasks_touched_, step_tasks_, gradient_norm_, tasks_evaluated_,
                                    unconverged_tasks_, exact_seconds_}) {
      g->Remove(id);
    }
  }

 private:
  std::shared_ptr<HypergradientGauges> gauges_;
  metrics::GaugeFamily* tasks_touched_;
  metrics::GaugeFamily* step_tasks_;
  metrics::GaugeFamily* gradient_norm_;
  metrics::GaugeFamily* tasks_evaluated_;
  metrics::GaugeFamily* unconverged_tasks_;
  metrics::GaugeFamily* exact_seconds_;
};

}  // namespace

std::unique_ptr<ClassSeries> NewMultitaskSeries(metrics::Registry* r,
                                                std::shared_ptr<HypergradientGauges> gauges) {
  return std::make_unique<MultitaskSeries>(r, std::move(gauges));
}

}  // namespace f2obo::server::series
