// RSVRB's step-size schedule: constant, as Theorem 2 of
// Guo, Hu, Zhang & Yang (eta_t = tau_t = eta, betas ~ eta^2), or decaying
// as their Theorem 1 (SVRB: eta_t = tau_t = c / (c0 + t)^(1/3), betas ~
// eta_t^2), in our normalization: the step factor
//   s_t = ((c0 + 1) / (c0 + t))^q,   s_1 = 1,
// scales the x- and y-steps (gamma_t = gamma s_t, alpha_t = alpha s_t) and,
// squared, the estimators' weights (b_t = (1 - momentum) s_t^2, b_d,t =
// (1 - task_momentum) s_t^2): the paper's c is folded into gamma and alpha,
// its beta constants into momentum and task_momentum, so that the options
// mean at t = 1 what they mean for the constant schedule.  q = 0 is the
// constant schedule, computed exactly as before (no 1 - (1 - m) rounding).
//
// The lazy per-task catch-up (rsvrb.cc) multiplies the keeps 1 - b_j of the
// skipped steps one by one, never as a ratio of prefix products (which
// underflow on long streams); Skipped() is that loop.
#ifndef F2OBO_CORE_MULTITASK_RSVRB_SCHEDULE_H_
#define F2OBO_CORE_MULTITASK_RSVRB_SCHEDULE_H_

#include <cmath>
#include <cstdint>

#include "core/options.h"

namespace f2obo {

class RsvrbSchedule {
 public:
  explicit RsvrbSchedule(const AlgorithmOptions& o)
      : q_(o.rsvrb_decay),
        c0_(o.rsvrb_offset),
        momentum_(o.momentum),
        task_momentum_(o.task_momentum) {}

  bool decaying() const { return q_ > 0.0; }
  // s_t for step t >= 1.
  double Step(int64_t t) const {
    if (!decaying()) return 1.0;
    return std::pow((c0_ + 1.0) / (c0_ + static_cast<double>(t)), q_);
  }
  // 1 - b_t of the per-task estimators (u, w, v, J, H) at step t.
  double Keep(int64_t t) const { return KeepOf(momentum_, t); }
  // 1 - b_d,t of d_t (Alg. 2 line 13) at step t.
  double TaskKeep(int64_t t) const { return KeepOf(task_momentum_, t); }

  // What the unsampled steps first..last (inclusive; none when last < first)
  // do to a task: its estimators are scaled by `keep` = prod_j (1 - b_j),
  // and its y moves by -(alpha / s_from) v times `y_weight` = sum_j s_j
  // prod_{i <= j} (1 - b_i), where v is the task's v and alpha its y-step at
  // its last update (step from = first - 1), so that each skipped step j
  // takes the y-step alpha s_j / s_from with the v decayed through j;
  // `y_weight_before_last` is the same sum without its last term (y one
  // step before).  Stops early once the product is 0 (every later term is 0).
  struct Decay {
    double keep = 1.0, y_weight = 0.0, y_weight_before_last = 0.0;
  };
  Decay Skipped(int64_t first, int64_t last) const {
    Decay r;
    for (int64_t j = first; j <= last && r.keep != 0.0; ++j) {
      r.keep *= Keep(j);
      r.y_weight_before_last = r.y_weight;
      r.y_weight += Step(j) * r.keep;
    }
    return r;
  }

 private:
  double KeepOf(double keep1, int64_t t) const {
    if (!decaying()) return keep1;
    const double s = Step(t);
    return 1.0 - (1.0 - keep1) * s * s;
  }

  double q_, c0_, momentum_, task_momentum_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_RSVRB_SCHEDULE_H_
