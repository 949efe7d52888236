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

}  // namespace
}  // namespace f2obo::server
