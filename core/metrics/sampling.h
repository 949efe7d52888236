// Which steps get exact metrics when the metrics worker cannot evaluate
// them all, and the honest estimate of a regret sum from those that do.
//
// Exact metrics cost more than a round (bench/RESULTS.md), so under load a
// session's worker falls behind.  Skipping the steps it cannot afford made
// BLReg, a sum over evaluated steps, stop growing: a flat line that reads
// as convergence.  Instead each due step t is evaluated with a probability
// p_t fixed before its draw, and the sum is estimated by Horvitz-Thompson
// (Horvitz & Thompson, JASA 1952; Sarndal, Swensson & Wretman, Model
// Assisted Survey Sampling, 1992, sec. 2.8 and 3.5 on Poisson sampling):
//
// Setting.  Due steps t = 1..T carry terms r_t (the regret term of step t,
// a function of the session's data and trajectory).  The metrics never feed
// back into rounds, so the r_t do not depend on which steps are sampled.
// Step t's probability p_t in (0, 1] is chosen from what is known before
// its draw (the backlog; never r_t, which is not computed yet), then
// I_t = [U_t < p_t] with U_t uniform on [0, 1) and independent of all
// else.  Let F_{t-1} be everything known before step t's draw: p_t is
// F_{t-1}-measurable and E[I_t | F_{t-1}] = p_t.
//
// Estimate.  Y = sum_t r_t, Yhat = sum_t I_t r_t / p_t.  Its error is a sum
// of martingale differences D_t = (I_t / p_t - 1) r_t:
//   E[D_t | F_{t-1}] = (p_t / p_t - 1) r_t = 0,
// so E[Yhat] = Y: unbiased, even though p_t depends on earlier draws
// (through the backlog) -- the classical independent-Poisson argument needs
// fixed p_t, the martingale one does not.
//
// Variance.  Martingale differences are uncorrelated, so
//   Var(Yhat) = sum_t E[D_t^2] = sum_t E[E[(I_t/p_t - 1)^2 | F_{t-1}] r_t^2]
//             = sum_t E[(1 - p_t) / p_t r_t^2],
// using E[(I/p - 1)^2] = p (1/p - 1)^2 + (1 - p) = (1 - p) / p.  Since
//   E[I_t (1 - p_t) / p_t^2 r_t^2 | F_{t-1}] = (1 - p_t) / p_t r_t^2,
// Vhat = sum_t I_t (1 - p_t) / p_t^2 r_t^2 is unbiased for Var(Yhat), and
// the standard error reported is sqrt(Vhat).  A step evaluated with
// p_t = 1 adds r_t exactly and nothing to Vhat: without load, Yhat is the
// plain sum and its standard error 0.
//
// tests/core/metrics/sampling_test.cc checks both by simulation.
#ifndef F2OBO_CORE_METRICS_SAMPLING_H_
#define F2OBO_CORE_METRICS_SAMPLING_H_

#include <cstdint>
#include <optional>

#include "core/state.h"

namespace f2obo {

// The probability with which a due step's exact metrics are computed when
// `queued` metric jobs of its session wait behind it and the worker's bound
// is `max_pending` (server --max_pending_metrics): 1 while the backlog is
// at most half the bound, falling linearly to `floor` at the bound, `floor`
// beyond.  Never below `floor` (> 0): no step is left out for certain, which
// is what keeps the estimate unbiased.
double InclusionProbability(int64_t queued, int64_t max_pending, double floor);

// Where a class keeps its coverage and estimate in RunningMetrics::sums.
struct SampleSlots {
  int skipped_steps;  // due steps without a term (not sampled, or failed)
  int estimate;       // sum of I_t r_t / p_t
  int variance;       // sum of I_t (1 - p_t) / p_t^2 r_t^2
};

// A sampled step's term: `term` is r_t, or nullopt when the class left it
// out of its sum (an unconverged solve: counted by the class, not here);
// `probability` is p_t.
void AddSampledTerm(std::optional<double> term, double probability, const SampleSlots& slots,
                    RunningMetrics* running);
// A due step without a term.
void AddSkippedStep(const SampleSlots& slots, RunningMetrics* running);

// sqrt of the variance sum (0 for a negative sum, which only round-off
// could produce).
double StandardError(double variance_sum);

}  // namespace f2obo

#endif  // F2OBO_CORE_METRICS_SAMPLING_H_
