// Automatic inner step sizes without Hessian-vector products: the step
// sizes of F2OBO's loops (paper Algorithm 1, lines 4-7) from the
// differences of the gradients the round already computes, for a family
// whose client answers values and first derivatives only (the oracle
// family, core/bilevel/families/oracle_family.h), where the smoothness
// estimate of the built-in families (row-norm bounds, power iteration with
// HVPs) is not available.
//
// The rule is adaptive gradient descent without descent (AdGD; Malitsky &
// Mishchenko, "Adaptive Gradient Descent without Descent", ICML 2020,
// Algorithm 1): after the step from u_{k-1} to u_k, the secant
//   L_k = ||grad(u_k) - grad(u_{k-1})|| / ||u_k - u_{k-1}||
// is a local smoothness constant (never above the Lipschitz constant of the
// gradient on the segment, by the mean value theorem), and the next step is
//   a_k = min(sqrt(1 + theta_{k-1}) a_{k-1}, 1 / (2 L_k)),
//   theta_k = a_k / a_{k-1},
// from a tiny first step a_0 with theta_0 = +inf.  Their Theorem 1: for
// convex f with a locally Lipschitz gradient the iterates converge to a
// minimizer at the O(1/k) rate of gradient descent with step 1/(2L), with
// no L given and no line search.  Where the gradient is L-Lipschitz every
// step after the first is >= 1/(2L) (by induction: L_k <= L and the cap
// sqrt(1 + theta) a_{k-1} >= a_{k-1}), and a step cut by a spuriously
// large secant (a ReLU network's kink) grows back instead of staying
// small, as under a running maximum.
//
// The growth cap (kMaxGrowth): a_k <= min(sqrt(1 + theta_{k-1}), 1.05)
// a_{k-1}.  AdGD's own cap is at least sqrt(2) while the step grows, so a
// run of small secants compounds it geometrically.  On a stream that is
// unsafe: every round's batch is another function, a secant is a lower
// bound of the curvature along the one direction moved, and a nonconvex
// model has flat directions.  On the torch Tuner's tanh MLP (bench/
// torch_tuner_defaults.py, seed 1) the step climbed from ~1 to 3.9 (8x
// the example's explicit 0.5) over rounds of flat secants just before
// the stream's class balance flipped; the next batches' sharp directions
// then threw y off (||h_t|| up 14x, the y-residual 3-5x), the hypergradient's
// bias drove the first layer's weight decay to the box edge and the loops
// never caught up again (steps ~0.1): the tuned network lost to its
// frozen start in 2 of 3 seeds.  With the cap (where AdGD's does not
// bind) the step is 1 / (2 L^_k), L^_k = max(L_k, L^_{k-1} / 1.05): a
// maximum of the recent secants that forgets at 5% per iteration (~20
// iterations, 7 rounds at K = 3, per e-fold), i.e. the largest curvature
// seen over the region the iterates
// recently crossed, while a secant above it still cuts the step at once.
// AdGD's Theorem 1 is kept: its proof uses the two caps only as upper
// bounds (a_k <= sqrt(1 + theta_{k-1}) a_{k-1}, a_k <= 1/(2 L_k)), and
// under an L-Lipschitz gradient the steps still return to >= 1/(2L),
// after a cut by a factor r within log(r) / log(1.05) iterations.  It is
// the paper's first rule, "do not increase the stepsize too fast", made
// stricter for a function that changes every round.  Measured: the
// MLP and the CNN then beat their frozen starts in 3 of 3 seeds (bench/
// RESULTS.md, "The torch Tuner with no step size").
//
// Applied to the two loops with their steps matched (first_order.h,
// MatchedAlpha: alpha_t = lambda_t beta_t, so that y - z is driven by
// grad_y f alone): the z-loop is gradient descent on g_t, with the secant
// L_g of grad_y g; the y-loop is gradient descent on L_t = f_t + lambda_t
// g_t, with the secant L_L of its direction d = grad_y f + lambda_t grad_y
// g.  One step a serves both: alpha = a, beta = a / lambda_t, and the bound
// is AdGD's for each loop,
//   a_k <= min(1 / (2 L_g), lambda_t / (2 L_L))
// (the built-in families' automatic beta_t = 1/(2 lambda_t L_g1 + L_f1)
// lies between the two loops' bounds and 2x their minimum).  The step a
// and theta persist in the session's state between rounds (a is the
// z-step, free of lambda_t; beta_t = a / lambda_t shrinks as lambda_t
// grows, as the scaled beta does); the first round of a session starts with
// a probe step that moves z by 1e-3 max(1, ||z||) and y by the same
// fraction of max(1, ||y||).  The secant of a round's last step comes from
// the hypergradient's pass (gradients at z_{K+1}, y_{K+1}), so F2OBO-SL's
// single iteration gets one too.
//
// What it keeps and trades away: within a round each loop is AdGD on a
// fixed function; the stream moves g_t and f_t between rounds and the
// algorithm's own analysis (Theorem 3.1) assumes alpha <= 1/L_g1, beta_t
// <= 1/(2 lambda_t L_g1), which a secant (a lower bound on L_g1) does not
// guarantee at every iteration: a step too long for the sharpest
// direction grows that direction's component, the next secant sees it,
// and the step is cut (the self-correction AdGD's proof formalizes).
// Secants need one batch through a round's loop: sf2obo's mini-batches
// change the function between iterations, and af2obo's loops are not
// served (create refuses automatic steps for them through an oracle).
// AF2OBO on the built-in families uses the rule inside each round's loops,
// from the round's smoothness step instead of the probe and with its own
// growth cap (core/bilevel/algorithms/af2obo.cc, inner_step_growth).
#ifndef F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECANT_STEPS_H_
#define F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECANT_STEPS_H_

#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/algorithm_info.h"
#include "core/bilevel/bilevel_family.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/round_control.h"
#include "core/smoothness.h"

namespace f2obo {

// The rule's part of the session's state (SessionState::aux): [a | theta],
// a = the last z-step (0: none yet, the next step is the probe), theta =
// a_k / a_{k-1} (AdGD's; unused while a = 0, where theta_0 = +inf).
inline constexpr int kSecantParts = 2;

// Whether a session's rounds take their inner steps from this rule: an
// algorithm that serves it, a family without HVPs, alpha or beta automatic.
bool UsesSecantSteps(const AlgorithmInfo& info, bool family_has_hvp, const AlgorithmOptions& o);

// Whether a part read from a stored state is one the rule can continue from.
absl::Status CheckSecantPart(const Vector& part);

class SecantSteps {
 public:
  // The fraction of max(1, ||u||) the probe step moves an iterate u.
  static constexpr double kProbe = 1e-3;
  // The most the step grows per iteration (the header's growth cap).
  static constexpr double kMaxGrowth = 1.05;

  // From the part of the state (empty: a session's first round).
  explicit SecantSteps(const Vector& part);
  // From a known step a0 > 0 (AF2OBO: the round's smoothness step) instead
  // of the probe, AdGD's theta_0 = +inf, and growth cap max_growth per
  // iteration instead of kMaxGrowth.
  SecantSteps(double a0, double max_growth)
      : a_(a0), theta_(std::numeric_limits<double>::infinity()), max_growth_(max_growth) {}
  Vector Part() const;

  // The steps for the iteration at z (gradient norm gz) and y (direction
  // norm d): the current a (alpha = a, beta = a / lambda), or the probe
  // while no secant has been seen.
  StepSizes Next(double lambda, double z_norm, double gz_norm, double y_norm, double d_norm);
  // The current a without a probe (a rule built from a0 > 0).
  StepSizes Current(double lambda) { return Next(lambda, 0.0, 0.0, 0.0, 0.0); }

  // The secant of the step just taken with Next's sizes: z moved by alpha
  // times its previous gradient (norm gz_prev) and the gradient changed by
  // dgz; y likewise with the direction d.  Updates a (AdGD's rule).
  void Observe(double lambda, double gz_prev, double dgz, double d_prev, double dd);

  // The local constants of the last secant, as reported: l_g1 = L_g and
  // l_f1 = max(L_L - lambda L_g, 0) (L_L <= L_f1 + lambda L_g1).
  Smoothness Estimate(double lambda) const;

 private:
  double a_ = 0.0;
  double theta_ = 0.0;
  double max_growth_ = kMaxGrowth;
  double last_ = 0.0;  // the z-step Next gave (a_, or the probe)
  double l_g_ = 0.0, l_l_ = 0.0;
};

// y-sized copies of the previous iteration's gradients, for the secants;
// freed between rounds as FirstOrderWorkspace is (Release, Ensure).
struct SecantWorkspace {
  explicit SecantWorkspace(int d2) : gz_prev(d2), d_prev(d2), d2_(d2) {}
  void Ensure() {
    if (gz_prev.size() == d2_) return;
    gz_prev.resize(d2_);
    d_prev.resize(d2_);
  }
  void Release() {
    gz_prev.resize(0);
    d_prev.resize(0);
  }
  Vector gz_prev;
  Vector d_prev;

 private:
  int d2_;
};

// F2OBO's K iterations (PenaltyInnerLoops) with the steps of `rule`,
// then h_t (Hypergradient, measuring ||grad_y f|| as `grad_y_f` says) and
// the last step's secant from its pass.
// `last` gets the steps of the last iteration.  Returns the rows read, or
// the status of `control` when it stopped the round.
absl::StatusOr<int64_t> SecantRoundLoops(BilevelFamily& family, const VecIn& x, double lambda,
                                         int k, const BatchView& upper, const BatchView& inner,
                                         Vector* y, Vector* z, FirstOrderWorkspace* ws,
                                         SecantWorkspace* sws, SecantSteps* rule, StepSizes* last,
                                         BilevelReport* report, RoundControl* control,
                                         GradYF grad_y_f);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECANT_STEPS_H_
