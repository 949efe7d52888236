// ServiceMetrics, white-box: what each published StepMetrics adds to the
// server-wide series (rendered in the text format, as /metrics serves it).
#include "server/service_metrics.h"

#include <regex>
#include <string>

#include <gtest/gtest.h>

namespace f2obo::server {
namespace {

// The value of the label-less series `name` in `text`, or -1 when absent.
double Value(const std::string& text, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\n" + name + " ([^\n]+)\n"))) return -1;
  return std::stod(m[1]);
}

v1::StepMetrics WithExact(int64_t t, bool inner_converged, bool cg_converged) {
  v1::StepMetrics m;
  m.set_session_id("s");
  m.set_t(t);
  m.mutable_exact()->set_t(t);
  m.mutable_exact()->set_inner_converged(inner_converged);
  m.mutable_exact()->set_cg_converged(cg_converged);
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
  previous_converged.mutable_exact()->set_previous_inner_converged(true);
  metrics.OnStepMetrics(previous_converged);
  EXPECT_EQ(Value(registry.Render(), name), 3);
  v1::StepMetrics previous_unconverged = WithExact(7, true, true);
  previous_unconverged.mutable_exact()->set_previous_inner_converged(false);
  metrics.OnStepMetrics(previous_unconverged);
  EXPECT_EQ(Value(registry.Render(), name), 4);
}

// The value of series `name` of session `id` in `text`, or -1 when absent.
double SessionValue(const std::string& text, const std::string& name, const std::string& id) {
  std::smatch m;
  if (!std::regex_search(text, m,
                         std::regex("\n" + name + "\\{session_id=\"" + id + "\"\\} ([^\n]+)\n"))) {
    return -1;
  }
  return std::stod(m[1]);
}

TEST(ServiceMetrics, EachClassExportsItsOwnSeriesAndADeletedSessionLosesThemAll) {
  metrics::Registry registry;
  ServiceMetrics metrics(&registry, /*per_session_labels=*/true);
  metrics.OnSessionCreated("mt");
  metrics.OnSessionCreated("simple");

  v1::StepMetrics mt = WithExact(4, true, true);
  mt.set_session_id("mt");
  mt.mutable_report()->set_lambda(2.5);
  mt.mutable_report()->mutable_multitask()->set_tasks(3);
  mt.mutable_report()->mutable_multitask()->set_tasks_touched(17);
  mt.mutable_exact()->set_true_gradient_norm(0.125);
  mt.mutable_exact()->set_regret_term(0.5);
  mt.mutable_exact()->mutable_running()->set_blreg(7.0);
  mt.mutable_exact()->mutable_multitask()->set_tasks_evaluated(11);
  mt.mutable_exact()->mutable_multitask()->set_unconverged_tasks(1);
  mt.mutable_exact()->mutable_multitask()->set_seconds(0.25);
  metrics.OnStepMetrics(mt);

  v1::StepMetrics simple;
  simple.set_session_id("simple");
  simple.set_t(2);
  simple.mutable_report()->mutable_simple()->set_inner_loss_before(1.0);
  simple.mutable_exact()->mutable_simple()->set_inner_gap(0.75);
  simple.mutable_exact()->mutable_simple()->set_g_star_converged(false);
  metrics.OnStepMetrics(simple);

  std::string text = registry.Render();
  // Multi-task: its own series, and the hypergradient figures it shares
  // with the bilevel class.
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_tasks_touched", "mt"), 17);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_step_tasks", "mt"), 3);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_gradient_norm", "mt"), 0.125);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_tasks_evaluated", "mt"), 11);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_unconverged_tasks", "mt"), 1);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_exact_seconds", "mt"), 0.25);
  EXPECT_EQ(SessionValue(text, "f2obo_session_blreg", "mt"), 7);
  EXPECT_EQ(SessionValue(text, "f2obo_session_regret_term", "mt"), 0.5);
  EXPECT_EQ(SessionValue(text, "f2obo_session_lambda", "mt"), 2.5);
  EXPECT_EQ(SessionValue(text, "f2obo_session_step", "mt"), 4);
  // Simple bilevel: its gaps, none of the other classes' series, and its own
  // convergence rule (g* not converged: counted).
  EXPECT_EQ(SessionValue(text, "f2obo_simple_session_inner_gap", "simple"), 0.75);
  EXPECT_EQ(SessionValue(text, "f2obo_session_blreg", "simple"), -1);
  EXPECT_EQ(SessionValue(text, "f2obo_multitask_session_tasks_touched", "simple"), -1);
  EXPECT_EQ(SessionValue(text, "f2obo_simple_session_inner_gap", "mt"), -1);
  EXPECT_EQ(Value(text, "f2obo_exact_metrics_unconverged_total"), 1);

  metrics.OnSessionDeleted("mt");
  metrics.OnSessionDeleted("simple");
  text = registry.Render();
  EXPECT_EQ(text.find("session_id=\"mt\""), std::string::npos) << text;
  EXPECT_EQ(text.find("session_id=\"simple\""), std::string::npos) << text;
}

}  // namespace
}  // namespace f2obo::server
