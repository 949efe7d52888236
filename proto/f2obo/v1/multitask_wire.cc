// The multi-task bilevel class on the wire: the `multitask` part of
// RoundReport, ExactMetrics, RunningMetrics and SessionInfo, Decision's
// lambda (no y: each task has its own).
#include <variant>

#include "core/multitask/multitask_metrics.h"
#include "core/multitask/multitask_problem.h"
#include "core/multitask/multitask_report.h"
#include "core/multitask/multitask_state.h"
#include "f2obo/v1/class_wire.h"
#include "f2obo/v1/convert.h"

namespace f2obo {
namespace {

void Report(const StepReport& report, v1::RoundReport* out) {
  const MultitaskReport& r = std::get<MultitaskReport>(report.detail);
  v1::MultitaskRoundReport* m = out->mutable_multitask();
  m->set_lambda(r.lambda);
  m->set_alpha(r.alpha);
  m->set_beta(r.beta);
  m->set_gamma(r.gamma);
  m->set_z_iterations(r.z_iterations);
  m->set_y_iterations(r.y_iterations);
  m->set_residual_y(r.residual_y);
  m->set_residual_z(r.residual_z);
  m->set_hypergradient_norm(r.direction.norm());
  m->set_batch_size(r.batch_size);
  m->set_hyper_batch_size(r.hyper_batch_size);
  m->set_tasks(r.tasks);
  m->set_new_tasks(r.new_tasks);
  m->set_tasks_touched(r.tasks_touched);
  m->set_d_task(r.d_task);
}

void Metrics(const ClassMetrics& metrics, v1::ExactMetrics* out) {
  const MultitaskMetrics& m = std::get<MultitaskMetrics>(metrics);
  out->set_t(m.t);
  v1::MultitaskExactMetrics* mt = out->mutable_multitask();
  mt->set_regret_term(m.regret_term);
  mt->set_hypergradient_error(m.hypergradient_error);
  mt->set_value(m.value);
  mt->set_true_gradient_norm(m.true_gradient_norm);
  mt->set_converged(m.Converged());
  mt->set_tasks_evaluated(m.tasks_evaluated);
  mt->set_tasks_touched(m.tasks_touched);
  mt->set_unconverged_tasks(m.unconverged_tasks);
  mt->set_seconds(m.seconds);
  for (const TaskMetrics& tm : m.tasks) {
    v1::MultitaskTaskMetrics* o = mt->add_tasks();
    o->set_task(tm.task);
    o->set_value(tm.value);
    o->set_regret_term(tm.regret_term);
    o->set_converged(tm.converged);
  }
}

void Running(const RunningMetrics& running, v1::RunningMetrics* out) {
  const auto sum = [&](MultitaskSum i) {
    return static_cast<size_t>(i) < running.sums.size() ? running.sums[i] : 0.0;
  };
  v1::MultitaskRunningMetrics* o = out->mutable_multitask();
  o->set_blreg(sum(kMultitaskBlreg));
  o->set_unconverged_steps(static_cast<int64_t>(sum(kMultitaskUnconvergedSteps)));
  for (int i = 0; i < kReportedTasks; ++i) {
    o->add_task_regret(sum(static_cast<MultitaskSum>(kMultitaskTaskRegret + i)));
  }
  SampleRunning(running, kMultitaskSampleSlots, out);
}

void Info(const Problem& p, const SessionState& s, v1::SessionInfo* out) {
  v1::MultitaskInfo* o = out->mutable_multitask();
  o->set_lambda(s.scalars[kMultitaskLambda]);
  const TaskTable* table = MultitaskTable(p);
  if (table == nullptr) return;
  o->set_y_dim(table->vector_size(0));
  o->set_tasks(MultitaskTaskCount(p));
  o->set_tasks_touched(table->touched(s));
}

void Decision(const Problem& /*p*/, const SessionState& s, v1::Decision* out) {
  out->set_lambda(s.scalars[kMultitaskLambda]);
}

}  // namespace

const ClassWire& MultitaskWire() {
  static const ClassWire wire{
      ProblemClass::kMultitaskBilevel, &Report, &Metrics, &Running, &Info, &Decision};
  return wire;
}

}  // namespace f2obo
