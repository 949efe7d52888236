// AOBO: T. Jia, H. Wang, C. Chen, "Achieving better local regret bound for
// online non-convex bilevel optimization", arXiv:2602.06457 (2026);
// reference [14] of the F2OBO paper (Table 1; its Algorithm 2 AF2OBO
// borrows this adaptive strategy).  Per step t, from the warm starts y_t, v_t:
//   while ||grad_y g_t(x_t, y)|| > delta:  y <- y - alpha grad_y g_t(x_t, y)
//                                                          (y_{t+1} = y)
//   for m = 1..M:  v <- v - eta (grad2_yy g_t(x_t, y_{t+1}) v
//                                - grad_y f_t(x_t, y_{t+1}))  (v_{t+1} = v)
//   h_t = grad_x f_t(x_t, y_{t+1}) - grad2_xy g_t(x_t, y_{t+1}) v_{t+1}
//   x_{t+1} = P_X(x_t - gamma h_t)
// Choices where the source leaves room:
//  * delta = options.delta, default 0.1 (paper Appendix A), a constant
//    rather than a horizon-dependent schedule.
//  * The loop stops after options.max_inner_iterations steps to protect the
//    server; the report flags cap_hit when the tolerance was not reached.
//  * The linear system gets a fixed M = options.linear_system_steps
//    (paper Appendix A: 5) steps of size eta = options.linear_system_step,
//    warm-started from the previous round's v (v_1 = 0).
//  * No window: AOBO targets the regret without window averaging.
// The last gradient of the loop is the residual ||grad_y g_t(x_t, y_{t+1})||,
// so the report's residual_y costs no extra pass.  aux layout: [0] v (d2).
#include "core/bilevel/algorithms/aobo.h"

#include <cmath>
#include <vector>

#include "core/bilevel/algorithms/aid_baseline.h"
#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"

namespace f2obo {
namespace {

class Aobo final : public AidBaseline {
 public:
  explicit Aobo(const BilevelAlgorithmContext& ctx) : AidBaseline(ctx) {}

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    const int cap = o_.max_inner_iterations;
    int64_t rows = 0;
    int k = 0;
    double residual = 0.0;
    while (true) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      family.G(s->x, s->y, inner, nullptr, &ws_.gy_g);
      rows += inner.rows.n;
      residual = ws_.gy_g.norm();
      if (!std::isfinite(residual)) {
        return absl::InvalidArgumentError(
            "aobo: inner loop diverged (non-finite gradient); alpha too large "
            "for this batch?");
      }
      if (residual <= o_.delta || k == cap) break;
      s->y.noalias() -= alpha * ws_.gy_g;
      ++k;
    }
    if (absl::Status st = Hypergradient(family, s, upper, inner, o_.linear_system_steps, &rows);
        !st.ok()) {
      return st;
    }
    StepAndReport(ws_.h, k, rows, s, report);
    report->residual_y = residual;
    report->cap_hit = k == cap && residual > o_.delta;
    return absl::OkStatus();
  }
};

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Aobo(ctx));
}

// Paper Appendix A (loss tuning): delta = 0.1, M = 5, alpha = 0.1,
// gamma = 0.001.
void PaperExperiment(AlgorithmOptions* o) {
  o->delta = 0.1;
  o->linear_system_steps = 5;
  AppendixACommon(o);
}

}  // namespace

const BilevelAlgorithmEntry& AoboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"aobo", ProblemClass::kBilevel,
       "AOBO (Jia et al.): inner loop to tolerance delta, AID hypergradient",
       BaselineRoundOptions().Add({Opt::delta, Opt::max_inner_iterations, Opt::linear_system_steps,
                                   Opt::linear_system_step}),
       nullptr, nullptr, &PaperExperiment},
      &Create};
  return entry;
}

}  // namespace f2obo
