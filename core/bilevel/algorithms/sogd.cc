// SOGD: P. Nazari, B. Hou, D. A. Tarzanagh, L. Shen, G. Michailidis,
// "Stochastic regret guarantees for online zeroth- and first-order bilevel
// optimization", arXiv:2511.01126 (2025); reference [23] of the F2OBO paper
// (Table 2).  Per step t, from y_t, v_t, m_{t-1}:
//   draw zeta (B inner rows);  y_{t+1} = y_t - alpha grad_y g_t(x_t, y_t; zeta)
//   draw fresh xi (B upper rows), zeta' (B inner rows)
//   v_{t+1} = v_t - beta (grad2_yy g_t(x_t, y_{t+1}; zeta') v_t
//                         - grad_y f_t(x_t, y_{t+1}; xi))
//   h_t = grad_x f_t(x_t, y_{t+1}; xi) - grad2_xy g_t(x_t, y_{t+1}; zeta') v_{t+1}
//   m_t = eta m_{t-1} + (1 - eta) h_t     (m_1 = h_1)
//   x_{t+1} = P_X(x_t - gamma m_t)
// with beta = options.linear_system_step (paper Appendix A: 0.1) and
// eta = options.momentum (paper Appendix A: 0.9).
// Choices where the source leaves room:
//  * Momentum form: this is the heavy-ball / exponential-moving-average
//    direction.  The original search direction is a STORM-type recursive
//    estimator, d_t = h_t(x_t) + (1 - a)(d_{t-1} - h_t(x_{t-1})), which
//    re-evaluates the hypergradient of step t's sample at the previous
//    decision x_{t-1} (with its own y, v).  We implement the EMA because the
//    paper's experiment specifies SOGD by one momentum coefficient eta = 0.9
//    only, and the EMA needs no second hypergradient per round (which would
//    double the HVP cost of this baseline and keep x_{t-1}, y_t, v_t in the
//    state).  Results therefore compare against SOGD-with-EMA-momentum.
//  * m_1 = h_1 (no zero-initialization bias in the first steps).
//  * Mini-batches: B = options.sample_rows (default 64), capped at the
//    batch's rows; the inner step uses its own draw, the linear-system step
//    and h_t share one fresh draw.  residual_y is evaluated on zeta'.
//  * v_1 = 0.
// Draws come from state.rng (reproducible, restorable).
// aux layout: [0] v (d2), [1] m (d1).
#include "core/bilevel/algorithms/sogd.h"

#include <vector>

#include "core/bilevel/algorithms/aid_baseline.h"
#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"

namespace f2obo {
namespace {

class Sogd final : public AidBaseline {
 public:
  explicit Sogd(const BilevelAlgorithmContext& ctx) : AidBaseline(ctx, {ctx.x_dim}) {}

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const int b = o_.sample_rows;
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    sampler_.Reserve(data);
    const BatchView zeta = sampler_.DrawInner(data.inner, b, &s->rng);
    family.G(s->x, s->y, zeta, nullptr, &ws_.gy_g);
    s->y.noalias() -= alpha * ws_.gy_g;
    int64_t rows = zeta.rows.n;

    const BatchView xi = sampler_.DrawUpper(data.upper, b, &s->rng);
    const BatchView zeta2 = sampler_.DrawInner(data.inner, b, &s->rng);
    rows += ResidualY(family, s->x, s->y, zeta2, &ws_, report);
    bool first = false;
    if (absl::Status st = Hypergradient(family, s, xi, zeta2, 1, &rows, &first); !st.ok()) {
      return st;
    }
    Vector& m = s->aux[1];
    if (first) {
      m = ws_.h;
    } else {
      m *= o_.momentum;
      m.noalias() += (1.0 - o_.momentum) * ws_.h;
    }
    StepAndReport(m, 1, rows, s, report);
    report->batch_size = report->hyper_batch_size = zeta2.rows.n;
    return absl::OkStatus();
  }

 private:
  RowSampler sampler_;
};

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Sogd(ctx));
}

// Paper Appendix A (online HPO): momentum eta = 0.9, linear-system step
// 0.1, alpha = 0.1, gamma = 0.001.
void PaperExperiment(AlgorithmOptions* o) {
  o->momentum = 0.9;
  o->linear_system_step = 0.1;
  AppendixACommon(o);
}

}  // namespace

const BilevelAlgorithmEntry& SogdAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"sogd", ProblemClass::kBilevel,
       "SOGD (Nazari et al.): stochastic, momentum on the hypergradient, one linear-system step",
       BaselineRoundOptions().Add({Opt::linear_system_step, Opt::momentum, Opt::sample_rows}),
       nullptr, nullptr, &PaperExperiment},
      &Create};
  return entry;
}

}  // namespace f2obo
