// OBBO: J. Bohne, D. Rosenberg, G. Kazantsev, P. Polak, "Online nonconvex
// bilevel optimization with Bregman divergences", arXiv:2409.10470 (2024);
// reference [3] of the F2OBO paper (Table 1).  Per step t, from the warm
// start y^0 = y_t:
//   for k = 0..K-1:  y^{k+1} = y^k - alpha grad_y g_t(x_t, y^k)
//   h_t = d/dx f_t(x, y^K(x)) at x_t, by iterative differentiation (ITD)
//         backward through the K steps with HVPs:
//     v = grad_y f_t(x_t, y^K),  h = grad_x f_t(x_t, y^K)
//     for k = K-1..0:  h -= alpha grad2_xy g_t(x_t, y^k) v
//                      v -= alpha grad2_yy g_t(x_t, y^k) v
//   d_t = (1/|W_t|) sum_{s in W_t} h_s,  W_t = the last min(t, w) steps
//   x_{t+1} = P_X(x_t - gamma d_t),  y_{t+1} = y^K
// Choices where the source leaves room:
//  * Bregman geometry: the Euclidean mirror map phi = ||x||^2 / 2, for which
//    the Bregman proximal step is the projected gradient step above (the
//    service has no per-session mirror map).
//  * The warm start y_t is treated as independent of x_t (dy^0/dx = 0), as
//    ITD over one round's unrolled loop does.
//  * Window: off by default (w = 1) since the F2OBO paper compares OBBO on
//    the regret without window averaging (Table 1); options.window > 1 gives
//    a uniform window mean of the stored past estimates.
//  * K = options.inner_steps (paper Appendix A: K = 5), fixed per round.
// The round is UnrolledItdRound (unrolled_itd_round.cc), shared with SOBBO.
#include "core/bilevel/algorithms/obbo.h"

#include "core/bilevel/algorithms/appendix_a.h"
#include "core/bilevel/algorithms/unrolled_itd_round.h"

namespace f2obo {
namespace {

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(
      new UnrolledItdRound(ctx, UnrolledItdRound::Rows::kWholeBatch));
}

// Paper Appendix A (loss tuning): K = 5, alpha = 0.1, gamma = 0.001.
void PaperExperiment(AlgorithmOptions* o) {
  o->inner_steps = 5;
  AppendixACommon(o);
}

}  // namespace

const BilevelAlgorithmEntry& ObboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"obbo", ProblemClass::kBilevel,
       "OBBO (Bohne et al.): K inner GD steps, hypergradient by iterative differentiation",
       BaselineRoundOptions().Add({Opt::inner_steps, Opt::window}), nullptr, nullptr,
       &PaperExperiment},
      &Create};
  return entry;
}

}  // namespace f2obo
