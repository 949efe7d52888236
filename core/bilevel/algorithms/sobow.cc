// SOBOW: S. Lin, D. Sow, K. Ji, Y. Liang, N. Shroff, "Non-convex bilevel
// optimization with time-varying objective functions", NeurIPS 36 (2023);
// reference [18] of the F2OBO paper (Table 1).  Per step t, from the warm
// starts y_t and v_t:
//   for k = 1..K:  y <- y - alpha grad_y g_t(x_t, y)          (y_{t+1} = y)
//   for m = 1..M:  v <- v - eta (grad2_yy g_t(x_t, y_{t+1}) v
//                                - grad_y f_t(x_t, y_{t+1}))  (v_{t+1} = v)
//   h_t = grad_x f_t(x_t, y_{t+1}) - grad2_xy g_t(x_t, y_{t+1}) v_{t+1}
//   d_t = (1/|W_t|) sum_{s in W_t} h_s,  W_t = the last min(t, w) steps
//   x_{t+1} = P_X(x_t - gamma d_t)
// The window holds the estimates h_s as computed at their own (x_s, f_s,
// g_s) ("a window average of the most recent hypergradient estimations
// stored in the memory"); past functions are never re-evaluated.
// Choices where the source leaves room:
//  * Window weights: uniform, 1 / min(t, w); fewer than w entries at the
//    start (the mean of what is stored).
//  * K: default 1 (SOBOW is single-loop; Table 1 counts O(T) gradient
//    queries); options.inner_steps may raise it.
//  * M = options.linear_system_steps, default 5 (paper Appendix A), with
//    v warm-started from the previous round (v_1 = 0) and evaluated at the
//    updated y_{t+1}; eta = options.linear_system_step (0.1).
//  * w = options.window, default 10 (the F2OBO paper does not state it).
// aux layout: [0] v (d2), then the window (w slots of d1, one bookkeeping).
#include "core/bilevel/algorithms/sobow.h"

#include <vector>

#include "core/bilevel/algorithms/aid_baseline.h"
#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"

namespace f2obo {
namespace {

class Sobow final : public AidBaseline {
 public:
  explicit Sobow(const BilevelAlgorithmContext& ctx)
      : AidBaseline(ctx), window_(1, o_.window, ctx.x_dim) {
    window_.AppendLayout(&aux_layout_);
  }

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    int64_t rows = 0;
    for (int k = 0; k < o_.inner_steps; ++k) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      family.G(s->x, s->y, inner, nullptr, &ws_.gy_g);
      s->y.noalias() -= alpha * ws_.gy_g;
      rows += inner.rows.n;
    }
    rows += ResidualY(family, s->x, s->y, inner, &ws_, report);
    if (absl::Status st = Hypergradient(family, s, upper, inner, o_.linear_system_steps, &rows);
        !st.ok()) {
      return st;
    }
    window_.PushAndAverage(ws_.h, &s->aux, &ws_.d);
    StepAndReport(ws_.d, o_.inner_steps, rows, s, report);
    return absl::OkStatus();
  }

 private:
  HypergradientWindow window_;
};

// Registry defaults: K = 1, M = 5 (paper Appendix A), w = 10.
void Defaults(AlgorithmOptions* o) {
  o->inner_steps = 1;
  o->linear_system_steps = 5;
  o->window = 10;
}

// Paper Appendix A (loss tuning): M = 5, alpha = 0.1, gamma = 0.001.
void PaperExperiment(AlgorithmOptions* o) {
  o->linear_system_steps = 5;
  AppendixACommon(o);
}

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Sobow(ctx));
}

}  // namespace

const BilevelAlgorithmEntry& SobowAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"sobow", ProblemClass::kBilevel,
       "SOBOW (Lin et al.): window-averaged AID hypergradient, warm-started linear system",
       BaselineRoundOptions().Add(
           {Opt::inner_steps, Opt::linear_system_steps, Opt::linear_system_step, Opt::window}),
       &Defaults, nullptr, &PaperExperiment},
      &Create};
  return entry;
}

}  // namespace f2obo
