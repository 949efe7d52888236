// The exact metrics of one multi-task step (SPEC section 9.3), computed off
// the request path by the class's MetricsEvaluator: the true hypergradient
// of F over the tasks seen so far (at most the 256 most recently seen,
// kMaxMetricsTasks, a memory bound),
//   F(x) = (1/n) sum_{i seen} F_i(x),  F_i(x) = f_i(x, y_i*(x)),
// each F_i on the latest batches the evaluator was shown for task i, at the
// x the round started from; each task's solve is core/metrics/
// exact_metrics.h's (Newton-CG for y_i*, CG for the Hessian system).
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_METRICS_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_METRICS_H_

#include <cstdint>
#include <vector>

namespace f2obo {

// Per-task figures are kept for the task indices 0 .. kReportedTasks - 1
// only: per-task series (Prometheus labels, the wire, running sums) stay a
// bounded set whatever m.  Tasks are numbered by the client, so these are
// the tasks it chose to put first (e.g. the ones it watches).
inline constexpr int kReportedTasks = 4;

// One reported task's part of a step's exact metrics, at the same x_t.
struct TaskMetrics {
  int task = 0;
  double value = 0.0;        // F_i(x_t)
  double regret_term = 0.0;  // ||G_X(x_t, grad F_i(x_t), gamma)||^2: task i's local regret term
  bool converged = true;     // its inner and CG solves met their tolerances
};

struct MultitaskMetrics {
  int64_t t = 0;
  int tasks_evaluated = 0;           // n: the tasks seen so far (at most 256)
  int64_t tasks_touched = 0;         // tasks holding state at step t (before the round)
  double value = 0.0;                // F(x_t)
  double true_gradient_norm = 0.0;   // ||grad F(x_t)||
  double hypergradient_error = 0.0;  // ||direction - grad F(x_t)|| (MultitaskReport)
  double regret_term = 0.0;          // ||G_X(x_t, grad F(x_t), gamma)||^2
  // Tasks whose inner solve or Hessian system did not converge; when any
  // did, the figures above are not trusted and the regret term is left out
  // of the running sum (counted in unconverged_steps instead).
  int unconverged_tasks = 0;
  double seconds = 0.0;  // what computing these metrics cost
  // The seen tasks with index < kReportedTasks, in increasing order.
  std::vector<TaskMetrics> tasks;
  bool Converged() const { return unconverged_tasks == 0; }
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_METRICS_H_
