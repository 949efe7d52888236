// SOBBO: J. Bohne, D. Rosenberg, G. Kazantsev, P. Polak, "Online nonconvex
// bilevel optimization with Bregman divergences", arXiv:2409.10470 (2024);
// reference [3] of the F2OBO paper (Table 2).  Per step t, from y^0 = y_t:
//   for k = 0..K-1:  draw zeta_k (B inner rows)
//                    y^{k+1} = y^k - alpha grad_y g_t(x_t, y^k; zeta_k)
//   draw fresh xi (B upper rows) and zeta (B inner rows)
//   h_t = ITD backward through the K steps on the fresh draws:
//     v = grad_y f_t(x_t, y^K; xi),  h = grad_x f_t(x_t, y^K; xi)
//     for k = K-1..0:  h -= alpha grad2_xy g_t(x_t, y^k; zeta) v
//                      v -= alpha grad2_yy g_t(x_t, y^k; zeta) v
//   d_t = (1/|W_t|) sum_{s in W_t} h_s,  W_t = the last min(t, w) steps
//   x_{t+1} = P_X(x_t - gamma d_t),  y_{t+1} = y^K
// Choices where the source leaves room:
//  * Bregman geometry: Euclidean (phi = ||x||^2 / 2), i.e. a projected step.
//  * Window weights: uniform, 1 / min(t, w) (the source allows a weighted
//    average); w = options.window, default 50, K = options.inner_steps,
//    default 5 (both paper Appendix A).
//  * Mini-batches: B = options.sample_rows (default 64) rows per draw, the
//    same size for every draw, capped at the batch's rows.  The backward
//    pass uses one fresh inner draw for all K HVP pairs rather than the
//    forward draws (an estimate of the derivative of the expected unrolled
//    map, not the exact derivative of this round's sampled unroll).
//  * residual_y is evaluated on the fresh inner draw zeta.
// Draws come from state.rng (see RowSampler), so runs are reproducible
// and a restored checkpoint continues exactly.
#include "core/algorithms/sobbo.h"

#include <vector>

#include "core/algorithms/appendix_a.h"
#include "core/algorithms/first_order.h"
#include "core/algorithms/second_order.h"

namespace f2obo {
namespace {

class Sobbo final : public BilevelAlgorithm {
 public:
  explicit Sobbo(const AlgorithmContext& ctx)
      : o_(ctx.options),
        set_(ctx.constraint),
        ws_(ctx.x_dim, ctx.y_dim),
        iterates_(o_.inner_steps + 1, Vector(ctx.y_dim)),
        window_(0, o_.window, ctx.x_dim) {
    window_.AppendLayout(&aux_layout_);
  }

  std::vector<int> AuxLayout() const override { return aux_layout_; }

  absl::Status Round(const StepData& data, Family& family, BilevelVars* s,
                     BilevelReport* report) override {
    const int k_steps = o_.inner_steps, b = o_.sample_rows;
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    sampler_.Reserve(data);
    int64_t rows = 0;
    iterates_[0] = s->y;
    for (int k = 0; k < k_steps; ++k) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      const BatchView zeta_k = sampler_.DrawInner(data.inner, b, &s->rng);
      family.G(s->x, iterates_[k], zeta_k, nullptr, &ws_.gy_g);
      iterates_[k + 1].noalias() = iterates_[k] - alpha * ws_.gy_g;
      rows += zeta_k.rows.n;
    }
    const BatchView xi = sampler_.DrawUpper(data.upper, b, &s->rng);
    const BatchView zeta = sampler_.DrawInner(data.inner, b, &s->rng);
    absl::StatusOr<int64_t> hypergradient_rows =
        ItdHypergradient(family, s->x, iterates_, k_steps, alpha, xi, zeta, &ws_, round_control());
    if (!hypergradient_rows.ok()) return hypergradient_rows.status();
    rows += *hypergradient_rows;
    rows += ResidualY(family, s->x, iterates_[k_steps], zeta, &ws_, report);
    s->y = iterates_[k_steps];
    EnsureAux(aux_layout_, s);
    window_.PushAndAverage(ws_.h, &s->aux, &ws_.d);
    ProjectedStep(set_, o_.gamma, ws_.d, &s->x);

    report->hypergradient = ws_.h;
    report->y_iterations = k_steps;
    report->batch_size = report->hyper_batch_size = zeta.rows.n;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  AlgorithmOptions o_;
  ConstraintSet set_;
  SecondOrderWorkspace ws_;
  std::vector<Vector> iterates_;  // y^0..y^K of the current round
  HypergradientWindow window_;
  std::vector<int> aux_layout_;
  RowSampler sampler_;
};

// Registry defaults: K = 5, w = 50 (paper Appendix A).
void Defaults(AlgorithmOptions* o) {
  o->inner_steps = 5;
  o->window = 50;
}

// Paper Appendix A (online HPO): w = 50, K = 5, alpha = 0.1, gamma = 0.001.
void PaperExperiment(AlgorithmOptions* o) {
  o->window = 50;
  o->inner_steps = 5;
  AppendixACommon(o);
}

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const AlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Sobbo(ctx));
}

}  // namespace

const BilevelAlgorithmEntry& SobboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"sobbo", ProblemClass::kBilevel,
       "SOBBO (Bohne et al.): stochastic OBBO with window averaging",
       BaselineRoundOptions().Add({Opt::inner_steps, Opt::window, Opt::sample_rows}), &Defaults,
       nullptr, &PaperExperiment},
      &Create};
  return entry;
}

}  // namespace f2obo
