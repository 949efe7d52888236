// The multi-task class's MetricsEvaluator (core/problem.h): keeps the
// latest batches of the tasks it was shown (Observe) and evaluates
// MultitaskMetrics over them.  "The tasks seen" are bounded: at most
// kMaxMetricsTasks tasks are kept, the most recently seen ones (a task's
// latest batches replace its earlier ones), so the evaluator's memory is
// at most kMaxMetricsTasks steps' batches whatever m (the metrics worker
// would otherwise hold a batch per task of a 10,000-task session).  Time
// per evaluation: one exact hypergradient (Newton-CG plus CG on HVPs,
// core/bilevel/bilevel_exact_metrics.h) per task kept, reported as
// MultitaskMetrics::seconds.
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_METRICS_EVALUATOR_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_METRICS_EVALUATOR_H_

#include <map>
#include <memory>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/constraint.h"
#include "core/multitask/multitask_family.h"
#include "core/multitask/task_table.h"
#include "core/problem.h"

namespace f2obo {

inline constexpr int kMaxMetricsTasks = 256;

class MultitaskMetricsEvaluator final : public MetricsEvaluator {
 public:
  // `table`: the session's encoding (to find each task's y_i, the warm
  // start of its inner solve); `y0`: a never-touched task's y.
  MultitaskMetricsEvaluator(std::unique_ptr<MultitaskFamily> family, ConstraintSet set,
                            double gamma, TaskTable table, Vector y0)
      : family_(std::move(family)),
        set_(std::move(set)),
        gamma_(gamma),
        table_(std::move(table)),
        y0_(std::move(y0)) {}

  void Observe(const StepData& data) override;
  absl::StatusOr<ClassMetrics> Evaluate(const SessionState& before, const StepReport& report,
                                        const StepData& current, const StepData* previous) override;

 private:
  std::unique_ptr<MultitaskFamily> family_;
  const ConstraintSet set_;
  const double gamma_;
  const TaskTable table_;
  const Vector y0_;
  struct Seen {
    StepData data;  // the task's latest batches
    uint64_t when;  // order of observation (key of by_when_)
    // The task's solutions at its last evaluation: the next one's warm
    // starts (kept when newer batches replace `data`).
    ExactWarmStart warm;
  };
  std::map<int, Seen> latest_;       // task -> its latest batches
  std::map<uint64_t, int> by_when_;  // observation order -> task (for eviction)
  uint64_t observed_ = 0;
};

// Adds one step's metrics to the running sums (MultitaskSum): the regret
// term to blreg if every task's solves converged, else one more
// unconverged step.
// `probability`: p_t, with which the step was sampled (core/metrics/sampling.h).
void AccumulateMultitask(const MultitaskMetrics& m, RunningMetrics* running,
                         double probability = 1.0);

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_METRICS_EVALUATOR_H_
