// The multi-task bilevel class (SPEC section 9.3): F(x) = (1/n) sum_i F_i(x)
// over the tasks seen.  Its series are f2obo_multitask_session_* (label
// session_id) and, for the task indices 0 .. kReportedTasks - 1 only,
// f2obo_multitask_task_* (labels session_id, task): a bounded label set
// whatever m (core/multitask/multitask_metrics.h says why those tasks).
#include <initializer_list>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/multitask/multitask_metrics.h"
#include "server/presentation/class_presentation.h"

namespace f2obo::server::presentation {
namespace {

bool Owns(const v1::RoundReport& r) { return r.has_multitask(); }

// The class's wire sets both flags to "every task's solves converged".
bool ExactConverged(const v1::ExactMetrics& e) { return e.multitask().converged(); }

class Series final : public ClassSeries {
 public:
  explicit Series(metrics::Registry* r)
      : regret_(SessionGauge(r, "f2obo_multitask_session_regret",
                             "Multi-task: cumulative local regret of F (the mean over the tasks "
                             "seen), the sum of converged regret terms over evaluated steps.")),
        regret_term_(SessionGauge(
            r, "f2obo_multitask_session_regret_term",
            "Multi-task: last regret term ||G_X(x_t, grad F(x_t), gamma)||^2 of F over the "
            "tasks seen.")),
        gradient_norm_(SessionGauge(
            r, "f2obo_multitask_session_gradient_norm",
            "Multi-task: ||grad F(x_t)||, the exact hypergradient norm of F over the tasks seen "
            "(the most recent 256 at most), at the last evaluated step.")),
        hypergradient_error_(SessionGauge(
            r, "f2obo_multitask_session_hypergradient_error",
            "Multi-task: ||direction - grad F(x_t)|| of the last evaluated step's round.")),
        objective_(SessionGauge(r, "f2obo_multitask_session_objective",
                                "Multi-task: F(x_t) over the tasks seen at the last evaluated "
                                "step.")),
        tasks_touched_(SessionGauge(r, "f2obo_multitask_session_tasks_touched",
                                    "Multi-task: tasks holding state after the last round (memory "
                                    "grows with these).")),
        tasks_evaluated_(
            SessionGauge(r, "f2obo_multitask_session_tasks_evaluated",
                         "Multi-task: tasks F was evaluated over at the last evaluated step.")),
        unconverged_tasks_(SessionGauge(
            r, "f2obo_multitask_session_unconverged_tasks",
            "Multi-task: tasks whose inner or CG solve stopped short at the last evaluated step.")),
        exact_seconds_(SessionGauge(
            r, "f2obo_multitask_session_exact_seconds",
            "Multi-task: seconds the last exact evaluation took (off the request path; one "
            "exact hypergradient per task evaluated).")),
        task_regret_(SessionGauge(r, "f2obo_multitask_task_regret",
                                  "Multi-task, tasks 0-3 only: task i's regret terms summed over "
                                  "the evaluated steps at which it was seen and converged.",
                                  {"task"})),
        task_regret_term_(SessionGauge(
            r, "f2obo_multitask_task_regret_term",
            "Multi-task, tasks 0-3 only: ||G_X(x_t, grad F_i(x_t), gamma)||^2 at the last "
            "evaluated step that saw task i.",
            {"task"})),
        task_objective_(SessionGauge(r, "f2obo_multitask_task_objective",
                                     "Multi-task, tasks 0-3 only: F_i(x_t) at the last evaluated "
                                     "step that saw task i.",
                                     {"task"})),
        estimate_(r, "f2obo_multitask_session_regret", "the multi-task session's regret sum") {}

  void Update(const std::string& session, const v1::StepMetrics& m) override {
    const std::vector<std::string> id = {session};
    tasks_touched_->WithLabels(id).Set(static_cast<double>(m.report().multitask().tasks_touched()));
    estimate_.Update(session, m);
    if (!m.has_exact()) return;
    const v1::MultitaskExactMetrics& mt = m.exact().multitask();
    regret_->WithLabels(id).Set(m.exact().running().multitask().blreg());
    regret_term_->WithLabels(id).Set(mt.regret_term());
    gradient_norm_->WithLabels(id).Set(mt.true_gradient_norm());
    hypergradient_error_->WithLabels(id).Set(mt.hypergradient_error());
    objective_->WithLabels(id).Set(mt.value());
    tasks_evaluated_->WithLabels(id).Set(mt.tasks_evaluated());
    unconverged_tasks_->WithLabels(id).Set(mt.unconverged_tasks());
    exact_seconds_->WithLabels(id).Set(mt.seconds());
    const auto& sums = m.exact().running().multitask().task_regret();
    for (const v1::MultitaskTaskMetrics& tm : mt.tasks()) {
      if (tm.task() < 0 || tm.task() >= kReportedTasks) continue;  // the bound, whatever sent
      const std::vector<std::string> labels = {session, absl::StrCat(tm.task())};
      task_regret_term_->WithLabels(labels).Set(tm.regret_term());
      task_objective_->WithLabels(labels).Set(tm.value());
      if (tm.task() < sums.size()) task_regret_->WithLabels(labels).Set(sums[tm.task()]);
    }
  }

  void Remove(const std::string& session) override {
    for (metrics::GaugeFamily* g :
         {regret_, regret_term_, gradient_norm_, hypergradient_error_, objective_, tasks_touched_,
          tasks_evaluated_, unconverged_tasks_, exact_seconds_}) {
      g->Remove({session});
    }
    for (int i = 0; i < kReportedTasks; ++i) {
      for (metrics::GaugeFamily* g : {task_regret_, task_regret_term_, task_objective_}) {
        g->Remove({session, absl::StrCat(i)});
      }
    }
    estimate_.Remove(session);
  }

 private:
  metrics::GaugeFamily* const regret_;
  metrics::GaugeFamily* const regret_term_;
  metrics::GaugeFamily* const gradient_norm_;
  metrics::GaugeFamily* const hypergradient_error_;
  metrics::GaugeFamily* const objective_;
  metrics::GaugeFamily* const tasks_touched_;
  metrics::GaugeFamily* const tasks_evaluated_;
  metrics::GaugeFamily* const unconverged_tasks_;
  metrics::GaugeFamily* const exact_seconds_;
  metrics::GaugeFamily* const task_regret_;
  metrics::GaugeFamily* const task_regret_term_;
  metrics::GaugeFamily* const task_objective_;
  EstimateSeries estimate_;
};

std::unique_ptr<ClassSeries> NewSeries(metrics::Registry* r) { return std::make_unique<Series>(r); }

// The shared keys (lambda, iterations, regret_term, blreg,
// hypergradient_error, value, converged) have the bilevel class's meaning
// for F, so the dashboard's charts of them show multi-task sessions too.
void StepJson(const v1::StepMetrics& m, JsonWriter& w) {
  const v1::MultitaskRoundReport& r = m.report().multitask();
  w.Key("lambda")
      .Number(r.lambda())
      .Key("z_iterations")
      .Int(r.z_iterations())
      .Key("y_iterations")
      .Int(r.y_iterations())
      .Key("tasks")
      .Int(r.tasks())
      .Key("tasks_touched")
      .Int(r.tasks_touched());
  if (!m.has_exact()) return;
  const v1::MultitaskExactMetrics& mt = m.exact().multitask();
  w.Key("regret_term")
      .Number(mt.regret_term())
      .Key("blreg")
      .Number(m.exact().running().multitask().blreg())
      .Key("hypergradient_error")
      .Number(mt.hypergradient_error())
      .Key("value")
      .Number(mt.value())
      .Key("gradient_norm")
      .Number(mt.true_gradient_norm())
      .Key("tasks_evaluated")
      .Int(mt.tasks_evaluated())
      .Key("exact_seconds")
      .Number(mt.seconds())
      .Key("converged")
      .Bool(mt.converged())
      .Key("task_metrics")
      .BeginArray();
  for (const v1::MultitaskTaskMetrics& tm : mt.tasks()) {
    w.BeginObject()
        .Key("task")
        .Int(tm.task())
        .Key("value")
        .Number(tm.value())
        .Key("regret_term")
        .Number(tm.regret_term())
        .Key("converged")
        .Bool(tm.converged())
        .EndObject();
  }
  w.EndArray();
}

void SessionJson(const v1::SessionInfo& info, JsonWriter& w) {
  const v1::MultitaskRunningMetrics& running = info.metrics().multitask();
  w.Key("lambda")
      .Number(info.multitask().lambda())
      .Key("y_dim")
      .Int(info.multitask().y_dim())
      .Key("blreg")
      .Number(running.blreg())
      .Key("unconverged_steps")
      .Int(running.unconverged_steps())
      .Key("tasks")
      .Int(info.multitask().tasks())
      .Key("tasks_touched")
      .Int(info.multitask().tasks_touched())
      .Key("task_regret")
      .BeginArray();
  for (double v : running.task_regret()) w.Number(v);
  w.EndArray();
}

}  // namespace

const ClassPresentation& MultitaskPresentation() {
  static const ClassPresentation p{
      ProblemClass::kMultitaskBilevel, &Owns, &ExactConverged, &NewSeries, &StepJson, &SessionJson};
  return p;
}

}  // namespace f2obo::server::presentation
