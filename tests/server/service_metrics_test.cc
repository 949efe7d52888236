// ServiceMetrics, white-box: what each published StepMetrics adds to the
// server-wide series (rendered in the text format, as /metrics serves it).
#include "server/service_metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

namespace f2obo::server {
namespace {

// The value of the series `name` (with its labels, e.g.
// `x{session_id="s"}`) in `text`, or -1 when absent.
double Value(const std::string& text, const std::string& name) {
  const std::string quoted = std::regex_replace(name, std::regex(R"([{}])"), R"(\$&)");
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\n" + quoted + " ([^\n]+)\n"))) return -1;
  return std::stod(m[1]);
}

// Session "s"'s series `name`, or -1 when absent.
double Of(const std::string& text, const std::string& name, const std::string& more = "") {
  return Value(text, name + "{session_id=\"s\"" + more + "}");
}

// A published multi-task step: report `tasks_touched`, exact metrics with
// per-task figures for `tasks` (each task's regret term = its index + 1).
v1::StepMetrics MultitaskStep(int64_t t, int64_t tasks_touched, std::vector<int> tasks) {
  v1::StepMetrics m;
  m.set_session_id("s");
  m.set_t(t);
  m.mutable_report()->mutable_multitask()->set_tasks_touched(tasks_touched);
  v1::ExactMetrics* e = m.mutable_exact();
  e->set_t(t);
  e->mutable_multitask()->set_converged(true);
  e->mutable_multitask()->set_regret_term(0.5);
  e->mutable_multitask()->set_true_gradient_norm(0.25);
  e->mutable_multitask()->set_value(3);
  e->mutable_running()->mutable_multitask()->set_blreg(1.5);
  e->mutable_multitask()->set_tasks_evaluated(static_cast<int>(tasks.size()));
  e->mutable_multitask()->set_seconds(0.125);
  for (int task : tasks) {
    v1::MultitaskTaskMetrics* tm = e->mutable_multitask()->add_tasks();
    tm->set_task(task);
    tm->set_regret_term(task + 1);
    tm->set_value(10 * task);
  }
  for (int i = 0; i < 4; ++i) e->mutable_running()->mutable_multitask()->add_task_regret(100 + i);
  return m;
}

v1::StepMetrics WithExact(int64_t t, bool inner_converged, bool cg_converged) {
  v1::StepMetrics m;
  m.set_session_id("s");
  m.set_t(t);
  m.mutable_report()->mutable_bilevel();
  m.mutable_exact()->set_t(t);
  m.mutable_exact()->mutable_bilevel()->set_inner_converged(inner_converged);
  m.mutable_exact()->mutable_bilevel()->set_cg_converged(cg_converged);
  return m;
}

TEST(ServiceMetrics, UnconvergedExactMetricsAreCountedAndConvergedOnesAreNot) {
  metrics::Registry registry;
  ServiceMetrics metrics(&registry, /*per_session_labels=*/true);
  const std::string name = "f2obo_exact_metrics_unconverged_total";
  EXPECT_EQ(Value(registry.Render(), name), 0) << "exported from the start";

  metrics.OnSessionCreated("s");
  metrics.OnStepMetrics(WithExact(1, true, true));
  v1::StepMetrics no_exact;  // a step without exact metrics counts nothing
  no_exact.set_session_id("s");
  no_exact.set_t(2);
  metrics.OnStepMetrics(no_exact);
  EXPECT_EQ(Value(registry.Render(), name), 0);

  metrics.OnStepMetrics(WithExact(3, false, true));
  metrics.OnStepMetrics(WithExact(4, true, false));
  metrics.OnStepMetrics(WithExact(5, false, false));
  EXPECT_EQ(Value(registry.Render(), name), 3);
  EXPECT_EQ(Value(registry.Render(), "f2obo_steps_total"), 5);

  // The step t-1 solve behind variation and drift counts too.
  v1::StepMetrics previous_converged = WithExact(6, true, true);
  previous_converged.mutable_exact()->mutable_bilevel()->set_previous_inner_converged(true);
  metrics.OnStepMetrics(previous_converged);
  EXPECT_EQ(Value(registry.Render(), name), 3);
  v1::StepMetrics previous_unconverged = WithExact(7, true, true);
  previous_unconverged.mutable_exact()->mutable_bilevel()->set_previous_inner_converged(false);
  metrics.OnStepMetrics(previous_unconverged);
  EXPECT_EQ(Value(registry.Render(), name), 4);
}

// A bilevel step of session "s" at t with hyperparameters `names` (value:
// t + the name's place).
v1::StepMetrics StepWith(int64_t t, const std::vector<std::string>& names) {
  v1::StepMetrics m;
  m.set_session_id("s");
  m.set_t(t);
  m.mutable_report()->mutable_bilevel();
  m.mutable_report()->set_upper_loss_before(0.5 * t);
  for (size_t i = 0; i < names.size(); ++i) {
    v1::Hyperparameter* h = m.add_hyperparameters();
    h->set_name(names[i]);
    h->set_value(static_cast<double>(t + i));
  }
  return m;
}

TEST(ServiceMetrics, ASessionsSeriesFollowItsStepsAndGoWithItsDeletion) {
  metrics::Registry registry;
  ServiceMetrics metrics(&registry, /*per_session_labels=*/true);
  const std::string hp = "f2obo_session_hyperparameter";
  metrics.OnSessionCreated("s");
  metrics.OnStepMetrics(StepWith(1, {"lr", "reg"}));
  metrics.OnStepMetrics(StepWith(2, {"lr", "reg"}));
  std::string text = registry.Render();
  EXPECT_EQ(Of(text, "f2obo_session_step"), 2);
  EXPECT_EQ(Of(text, "f2obo_session_prequential_loss"), 1.0);
  EXPECT_EQ(Of(text, hp, ",name=\"lr\""), 2);
  EXPECT_EQ(Of(text, hp, ",name=\"reg\""), 3);
  // A step naming other hyperparameters: the new name gets its series.
  metrics.OnStepMetrics(StepWith(3, {"lr", "momentum"}));
  text = registry.Render();
  EXPECT_EQ(Of(text, hp, ",name=\"momentum\""), 4);
  EXPECT_EQ(Of(text, hp, ",name=\"lr\""), 3);
  metrics.OnRollback("s", 2);
  EXPECT_EQ(Of(registry.Render(), "f2obo_session_step"), 2);

  metrics.OnSessionDeleted("s");
  text = registry.Render();
  EXPECT_EQ(Of(text, "f2obo_session_step"), -1);
  EXPECT_EQ(Of(text, hp, ",name=\"lr\""), -1);
  EXPECT_EQ(Of(text, hp, ",name=\"momentum\""), -1);
  // A late message of the deleted session brings nothing back.
  metrics.OnStepMetrics(StepWith(4, {"lr"}));
  EXPECT_EQ(Of(registry.Render(), "f2obo_session_step"), -1);
  // A new session of the same id starts its own series.
  metrics.OnSessionCreated("s");
  metrics.OnStepMetrics(StepWith(1, {"lr"}));
  text = registry.Render();
  EXPECT_EQ(Of(text, "f2obo_session_step"), 1);
  EXPECT_EQ(Of(text, hp, ",name=\"lr\""), 1);
  EXPECT_EQ(Value(text, "f2obo_steps_total"), 5);
}

TEST(ServiceMetrics, MultitaskSessionsGetTheirOwnSeriesAndPerTaskOnlyForTheFirstTasks) {
  metrics::Registry registry;
  ServiceMetrics metrics(&registry, /*per_session_labels=*/true);
  metrics.OnSessionCreated("s");
  // Tasks 1 and 3 are reported; 7 is beyond the bound (whatever is sent).
  metrics.OnStepMetrics(MultitaskStep(1, 5000, {1, 3, 7}));
  const std::string text = registry.Render();
  EXPECT_EQ(Of(text, "f2obo_session_step"), 1);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_tasks_touched"), 5000);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_regret"), 1.5);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_regret_term"), 0.5);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_gradient_norm"), 0.25);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_objective"), 3);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_tasks_evaluated"), 3);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_exact_seconds"), 0.125);
  EXPECT_EQ(Of(text, "f2obo_multitask_task_regret_term", ",task=\"1\""), 2);
  EXPECT_EQ(Of(text, "f2obo_multitask_task_objective", ",task=\"3\""), 30);
  EXPECT_EQ(Of(text, "f2obo_multitask_task_regret", ",task=\"3\""), 103);
  EXPECT_EQ(Of(text, "f2obo_multitask_task_regret_term", ",task=\"0\""), -1) << "not seen";
  EXPECT_EQ(text.find("task=\"7\""), std::string::npos) << "per-task series are bounded";
  // Not the bilevel class's series.
  EXPECT_EQ(Of(text, "f2obo_session_blreg"), -1);
  EXPECT_EQ(Of(text, "f2obo_session_lambda"), -1);

  // A step without exact metrics moves tasks touched only.
  v1::StepMetrics plain = MultitaskStep(2, 5001, {});
  plain.clear_exact();
  metrics.OnStepMetrics(plain);
  EXPECT_EQ(Of(registry.Render(), "f2obo_multitask_session_tasks_touched"), 5001);
  EXPECT_EQ(Of(registry.Render(), "f2obo_multitask_session_regret"), 1.5);

  // An unconverged task's solve counts as unconverged exact metrics.
  v1::StepMetrics unconverged = MultitaskStep(3, 5001, {0});
  unconverged.mutable_exact()->mutable_multitask()->set_converged(false);
  metrics.OnStepMetrics(unconverged);
  EXPECT_EQ(Value(registry.Render(), "f2obo_exact_metrics_unconverged_total"), 1);

  metrics.OnSessionDeleted("s");
  EXPECT_EQ(registry.Render().find("session_id=\"s\""), std::string::npos);
}

TEST(ServiceMetrics, EachClassSetsOnlyItsOwnSeries) {
  metrics::Registry registry;
  ServiceMetrics metrics(&registry, /*per_session_labels=*/true);
  metrics.OnSessionCreated("s");
  v1::StepMetrics simple;
  simple.set_session_id("s");
  simple.set_t(1);
  simple.mutable_report()->mutable_simple()->set_alpha(0.5);
  simple.mutable_exact()->mutable_simple()->set_inner_gap(0.75);
  simple.mutable_exact()->mutable_simple()->set_g_star_converged(true);
  metrics.OnStepMetrics(simple);
  v1::StepMetrics bilevel = WithExact(2, true, true);
  bilevel.mutable_exact()->mutable_running()->mutable_bilevel()->set_blreg(2.5);
  bilevel.mutable_report()->mutable_bilevel()->set_lambda(4);
  metrics.OnStepMetrics(bilevel);
  const std::string text = registry.Render();
  EXPECT_EQ(Of(text, "f2obo_simple_session_inner_gap"), 0.75);
  EXPECT_EQ(Of(text, "f2obo_session_blreg"), 2.5);
  EXPECT_EQ(Of(text, "f2obo_session_lambda"), 4);
  EXPECT_EQ(Of(text, "f2obo_multitask_session_regret"), -1);
  EXPECT_EQ(Value(text, "f2obo_exact_metrics_unconverged_total"), 0)
      << "a simple step's convergence is its g* solve's";
}

}  // namespace
}  // namespace f2obo::server
