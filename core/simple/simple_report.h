// What one simple bilevel round did (the class-specific half of a
// StepReport): written by the simple bilevel algorithms, sent as the
// wire's RoundReport.simple.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_REPORT_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_REPORT_H_

#include "core/smoothness.h"

namespace f2obo {

struct SimpleReport {
  // g_t(x_t): g on the step's inner rows at the iterate x_t the round
  // starts from (before it learned from them), what every algorithm of the
  // class evaluates anyway for its own step.  Not at the decision z_t:
  // IR-SCG / IR-FSCG serve a weighted average of iterates, so the two
  // differ there (f_t at the decision is StepReport::upper_loss_before).
  // tests/core/simple/simple_session_test.cc pins it for every algorithm.
  double inner_loss_before = 0.0;
  // IR-SCG / IR-FSCG: the step size alpha_t = 2/(t+2), the regularization
  // weight sigma_t = s (t+1)^-p, and the Frank-Wolfe gap of the round's
  // estimate <d_t, x_t - s_t> of the combined objective (s_t the LMO point).
  // AGM-BiO: alpha = a_k, sigma = 0, fw_gap_estimate = 0.
  double alpha = 0.0;
  double sigma = 0.0;
  double fw_gap_estimate = 0.0;
  // AGM-BiO: the level g_k of the cutting plane, and the smoothness
  // constants behind its step sizes.
  double g_level = 0.0;
  double l_f = 0.0;
  double l_g = 0.0;
  // kPowerIteration when the family computed l_f or l_g (its
  // SmoothnessF / G: power iteration), kNone when both were options.
  SmoothnessSource smoothness_source = SmoothnessSource::kNone;
  // Rows of each kind in the algorithm's window after the round (0 when it
  // keeps none, e.g. IR-SCG), and whether the round recomputed its
  // estimators over the whole window (IR-FSCG every q steps).
  int window_upper_rows = 0;
  int window_inner_rows = 0;
  bool full_pass = false;
  // Time spent in the LMO or projections, for the benchmarks' share.
  double oracle_seconds = 0.0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_REPORT_H_
