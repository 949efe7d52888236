// The simple bilevel class's exact metrics (core/simple/simple_metrics.h),
// off the request path: f, g, the inner gap against an accurate g*, the
// Frank-Wolfe gap and the outer gap, on a window of the most recent rows
// the evaluator was shown (Observe), and how they add to the running sums.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_METRICS_EVALUATOR_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_METRICS_EVALUATOR_H_

#include <memory>

#include "core/constraint.h"
#include "core/problem.h"
#include "core/simple/inner_solve.h"
#include "core/simple/row_window.h"
#include "core/simple/simple_family.h"
#include "core/simple/simple_metrics.h"
#include "core/state.h"

namespace f2obo {

// Rows of each kind the metrics are evaluated on: f_t and g_t of a stream
// are means over its most recent rows, so the gaps measure the decision
// against the problem the recent data defines.
inline constexpr int kSimpleMetricsWindowRows = 2048;

class SimpleMetricsEvaluator final : public MetricsEvaluator {
 public:
  // `cols`: the width of every row (FamilyConfig::features).
  SimpleMetricsEvaluator(std::unique_ptr<SimpleFamily> family, ConstraintSet set, int cols,
                         int window_rows = kSimpleMetricsWindowRows);

  void Observe(const StepData& data) override;
  absl::StatusOr<ClassMetrics> Evaluate(const SessionState& before, const StepReport& report,
                                        const StepData& current, const StepData* previous) override;

  // The metrics of `decision` on the current window (for tests and tools).
  absl::StatusOr<SimpleMetrics> Measure(int64_t t, const VecIn& decision);

 private:
  std::unique_ptr<SimpleFamily> family_;
  const ConstraintSet set_;
  RowWindow upper_, inner_;
  // The last g* solution: the next solve's warm start.
  Vector last_minimizer_;
};

// Adds one step's metrics to the class's running sums (SimpleSum order);
// a step whose g* solve did not converge is counted, not summed.
// `probability`: p_t, with which the step was sampled (core/metrics/sampling.h).
void AccumulateSimple(const SimpleMetrics& m, RunningMetrics* running, double probability = 1.0);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_METRICS_EVALUATOR_H_
