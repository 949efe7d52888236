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
// and a restored checkpoint continues exactly.  The round is
// UnrolledItdRound (unrolled_itd_round.cc), shared with OBBO.
#include "core/bilevel/algorithms/sobbo.h"

#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/algorithms/unrolled_itd_round.h"

namespace f2obo {
namespace {

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

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(
      new UnrolledItdRound(ctx, UnrolledItdRound::Rows::kMiniBatches));
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
