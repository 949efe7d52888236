// The exact metrics of one simple bilevel step (SPEC section 9), computed
// off the request path by the class's MetricsEvaluator on the evaluator's
// window (the last window_rows rows of each kind it was shown, including
// the step's own) at the decision the round started from.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_METRICS_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_METRICS_H_

#include <cstdint>
#include <optional>

namespace f2obo {

struct SimpleMetrics {
  int64_t t = 0;
  double f = 0.0;  // f(decision) on the window's upper rows
  double g = 0.0;  // g(decision) on the window's inner rows
  // g* = min_{z in Z} g(z) on the window's inner rows (accurate solve),
  // and the inner optimality gap g(decision) - g* >= 0.
  double g_star = 0.0;
  double inner_gap = 0.0;
  bool g_star_converged = true;
  // The Frank-Wolfe gap max_{s in Z} <grad g(decision), decision - s>: an
  // upper bound on the inner gap (convexity), cheap; nullopt if Z has no
  // LMO (unbounded sets).
  std::optional<double> fw_gap;
  // f* = min f over argmin_Z g, when the family gives it (linear_inverse:
  // closed form; least_squares: the constrained / minimum-norm solve), and
  // the outer gap f(decision) - f* (may be negative: the decision need not
  // be feasible for the inner problem).
  std::optional<double> f_star;
  std::optional<double> outer_gap;
  int window_upper_rows = 0;
  int window_inner_rows = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_METRICS_H_
