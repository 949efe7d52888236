// Pieces shared by the second-order baselines (SPEC section 3 "Baselines":
// OBBO, SOBOW, AOBO, FSOBO, SOBBO, SOGD).  Unlike Algorithms 1-3 they need
// HVPs from the family: grad2_yy g v (HvpYYG) and grad2_xy g v (HvpXYG).
//
// Common conventions of the baselines:
//  * No multiplier: state.lambda is left unchanged, the report says 0.
//  * The report's alpha is the inner GD step on y; beta stays 0.
//    y_iterations counts inner GD steps on y (z_iterations stays 0; the
//    linear-system steps are not counted as inner iterations).
//  * residual_y = ||grad_y g_t(x_t, y_{t+1})||; stochastic baselines
//    evaluate it on the round's hypergradient mini-batch.
//  * report.hypergradient is this round's estimate h_t of grad F_t(x_t),
//    which the exact metrics compare with the truth; the x-step may use a
//    window mean or a momentum of the h's instead (see each algorithm).
//  * rows_processed counts every oracle pass (gradient or HVP) over a view.
//  * Algorithm-owned state (linear-system warm start v, windows, momentum)
//    lives in SessionState::aux, so a checkpoint continues exactly.
#ifndef F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECOND_ORDER_H_
#define F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECOND_ORDER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/bilevel/bilevel_family.h"
#include "core/bilevel/bilevel_report.h"
#include "core/bilevel/bilevel_state.h"
#include "core/hypergradients/row_sampler.h"
#include "core/options.h"
#include "core/rng.h"
#include "core/round_control.h"
#include "core/state_parts.h"

namespace f2obo {

// Scratch for one round, sized once per session so rounds do not allocate.
struct SecondOrderWorkspace {
  SecondOrderWorkspace(int d1, int d2)
      : gy_g(d2), gy_f(d2), v(d2), hv_y(d2), gx_f(d1), hv_x(d1), h(d1), d(d1) {}
  Vector gy_g;  // grad_y g
  Vector gy_f;  // grad_y f
  Vector v;     // ITD's backward vector
  Vector hv_y;  // grad2_yy g v
  Vector gx_f;  // grad_x f
  Vector hv_x;  // grad2_xy g v
  Vector h;     // h_t, the round's hypergradient estimate
  Vector d;     // d_t, the x-step direction (window mean or momentum)
};

// alpha, or 1/L_g1 from the family's estimate at (x, y) on the full step
// batches when options.alpha_auto.  Records alpha, L_g1, gamma, lambda = 0 and
// beta = 0 in the report.
double InnerStepSize(const AlgorithmOptions& o, BilevelFamily& family, const VecIn& x,
                     const VecIn& y, const StepData& data, BilevelReport* report);

// The options every baseline round reads: the inner step (InnerStepSize)
// and the upper step.
inline OptionSet BaselineRoundOptions() { return {Opt::alpha, Opt::alpha_auto, Opt::gamma}; }

// report->residual_y = ||grad_y g(x, y)|| on `inner` (one pass, returns rows).
int64_t ResidualY(BilevelFamily& family, const VecIn& x, const VecIn& y, const BatchView& inner,
                  SecondOrderWorkspace* ws, BilevelReport* report);

// AID (approximate implicit differentiation) at (x, y):
//   for m = 1..steps:  v <- v - eta (grad2_yy g(x, y) v - grad_y f(x, y))
//   h = grad_x f(x, y) - grad2_xy g(x, y) v           -> ws->h
// f on `upper`, the HVPs on `inner`; `v` is updated in place (the caller's
// warm start).  Returns the rows read.
// Returns the rows read, or the status of `control` when it stopped the
// round between two of the `steps` iterations.
absl::StatusOr<int64_t> AidHypergradient(BilevelFamily& family, const VecIn& x, const VecIn& y,
                                         const BatchView& upper, const BatchView& inner, int steps,
                                         double eta, Vector* v, SecondOrderWorkspace* ws,
                                         RoundControl* control);

// ITD (iterative differentiation) through y^{k+1} = y^k - alpha grad_y g(x, y^k),
// k = 0..K-1, from a y^0 that does not depend on x:
//   v = grad_y f(x, y^K),  h = grad_x f(x, y^K)
//   for k = K-1..0:  h -= alpha grad2_xy g(x, y^k) v;  v -= alpha grad2_yy g(x, y^k) v
// (the last v-update is skipped: dy^0/dx = 0).  iterates[0..K] hold y^k;
// f on `upper`, the HVPs on `inner`.  Writes ws->h; returns the rows read.
// Returns the rows read, or the status of `control` when it stopped the
// round between two of the k_steps backward steps.
absl::StatusOr<int64_t> ItdHypergradient(BilevelFamily& family, const VecIn& x,
                                         const std::vector<Vector>& iterates, int k_steps,
                                         double alpha, const BatchView& upper,
                                         const BatchView& inner, SecondOrderWorkspace* ws,
                                         RoundControl* control);

// Makes state->aux's first parts hold vectors of exactly `sizes`; if they do
// not (a fresh session, or a state written by another algorithm), resets
// aux to those parts, zeros, and returns true.  Parts after them (the
// automatic upper step's, core/bilevel/hypergradients/upper_step.h) are kept when
// the first fit.  Allocates only when it resets.
bool EnsureAux(const std::vector<int>& sizes, BilevelVars* state);

// A window of the last w hypergradient estimates in aux slots
// [first, first + w), plus a bookkeeping slot {filled, next} at first + w.
class HypergradientWindow {
 public:
  HypergradientWindow(int first, int width, int d1) : first_(first), width_(width), d1_(d1) {}
  // Appends the window's slot sizes to an aux layout.
  void AppendLayout(std::vector<int>* sizes) const;
  // Stores h (overwriting the oldest entry once full) and writes the uniform
  // mean of the min(rounds so far, w) stored entries into *mean.  The sum
  // runs in slot order, so the result is a deterministic function of aux.
  void PushAndAverage(const Vector& h, StateParts* aux, Vector* mean) const;

 private:
  int first_, width_, d1_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SECOND_ORDER_H_
