// The sampling design of the exact metrics (core/metrics/sampling.h): the
// Horvitz-Thompson estimate is unbiased and its variance estimate matches
// the spread, by simulation with fixed seeds, also when each step's
// probability depends on earlier draws (a backlog).
#include "core/metrics/sampling.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace f2obo {
namespace {

constexpr SampleSlots kSlots{0, 1, 2};

// Regret-like terms: decaying with noise, a few large ones.
std::vector<double> Terms(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> noise(0.0, 1.0);
  std::vector<double> r(n);
  for (int t = 0; t < n; ++t) r[t] = 5.0 / std::sqrt(t + 1.0) * noise(rng);
  return r;
}

struct Replication {
  double estimate = 0.0;
  double variance = 0.0;   // Vhat
  double plain_sum = 0.0;  // the sum over evaluated steps only (the old BLReg)
  int evaluated = 0;
};

// One pass over `r`.  With `backlog`, p_t follows a simulated queue that
// grows by `cost` per evaluated step and shrinks by one per step, so it
// depends on the earlier draws; else p_t = `fixed` for every step.
Replication OnePass(const std::vector<double>& r, bool backlog, double fixed,
                    std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  RunningMetrics running;
  Replication out;
  double queued = 0.0;
  for (double term : r) {
    const double p = backlog ? InclusionProbability(static_cast<int64_t>(queued), 16, 0.05) : fixed;
    if (u(rng) < p) {
      AddSampledTerm(term, p, kSlots, &running);
      out.plain_sum += term;
      ++out.evaluated;
      if (backlog) queued += 6.0;
    } else {
      AddSkippedStep(kSlots, &running);
    }
    if (backlog) queued = std::max(0.0, queued - 1.0);
  }
  out.estimate = running.sums.empty() ? 0.0 : running.sums[kSlots.estimate];
  out.variance = running.sums.empty() ? 0.0 : running.sums[kSlots.variance];
  EXPECT_EQ(static_cast<int>(running.sums[kSlots.skipped_steps]) + out.evaluated,
            static_cast<int>(r.size()));
  return out;
}

struct Summary {
  double mean = 0.0, variance = 0.0, mean_vhat = 0.0, mean_plain = 0.0, mean_evaluated = 0.0;
};

Summary Replicate(const std::vector<double>& r, bool backlog, double fixed, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Replication> reps;
  for (int i = 0; i < n; ++i) reps.push_back(OnePass(r, backlog, fixed, rng));
  Summary s;
  for (const Replication& x : reps) {
    s.mean += x.estimate / n;
    s.mean_vhat += x.variance / n;
    s.mean_plain += x.plain_sum / n;
    s.mean_evaluated += static_cast<double>(x.evaluated) / n;
  }
  for (const Replication& x : reps) s.variance += (x.estimate - s.mean) * (x.estimate - s.mean);
  s.variance /= n - 1;
  return s;
}

double Sum(const std::vector<double>& r) {
  double y = 0.0;
  for (double v : r) y += v;
  return y;
}

TEST(InclusionProbability, OneUntilHalfTheBoundThenDownToTheFloorNeverZero) {
  EXPECT_EQ(InclusionProbability(0, 64, 0.05), 1.0);
  EXPECT_EQ(InclusionProbability(32, 64, 0.05), 1.0);
  EXPECT_NEAR(InclusionProbability(48, 64, 0.05), 0.525, 1e-12);
  EXPECT_EQ(InclusionProbability(64, 64, 0.05), 0.05);
  EXPECT_EQ(InclusionProbability(1000, 64, 0.05), 0.05);
  double last = 1.0;
  for (int q = 0; q <= 200; ++q) {
    const double p = InclusionProbability(q, 64, 0.05);
    EXPECT_LE(p, last) << q;
    EXPECT_GT(p, 0.0) << q;
    last = p;
  }
  // A floor of 0 (or less) would leave steps out for certain: clamped.
  EXPECT_GT(InclusionProbability(1000, 64, 0.0), 0.0);
  EXPECT_GT(InclusionProbability(1000, 0, -1.0), 0.0);
}

TEST(HorvitzThompson, EveryStepAtProbabilityOneIsThePlainSumWithNoError) {
  const std::vector<double> r = Terms(100, 1);
  std::mt19937_64 rng(2);
  const Replication x = OnePass(r, /*backlog=*/false, 1.0, rng);
  EXPECT_EQ(x.evaluated, 100);
  EXPECT_NEAR(x.estimate, Sum(r), 1e-9 * Sum(r));
  EXPECT_EQ(x.variance, 0.0);
  EXPECT_EQ(StandardError(x.variance), 0.0);
}

// Fixed p: Var(Yhat) = sum (1 - p) / p r_t^2 in closed form.
TEST(HorvitzThompson, FixedProbabilityMatchesTheClosedForm) {
  const std::vector<double> r = Terms(300, 3);
  const double p = 0.1;
  double closed = 0.0;
  for (double v : r) closed += (1.0 - p) / p * v * v;
  const int n = 4000;
  const Summary s = Replicate(r, /*backlog=*/false, p, n, 4);
  const double y = Sum(r);
  // The mean of n estimates is within 4 standard errors of the truth.
  EXPECT_NEAR(s.mean, y, 4.0 * std::sqrt(closed / n)) << "Y = " << y;
  // Empirical variance and the mean variance estimate agree with the
  // closed form (the empirical variance of 4000 draws is good to ~5%).
  EXPECT_NEAR(s.variance / closed, 1.0, 0.1);
  EXPECT_NEAR(s.mean_vhat / closed, 1.0, 0.1);
  // What skipping did: the evaluated steps' plain sum is p Y, far below Y.
  EXPECT_NEAR(s.mean_plain / y, p, 0.02);
}

// p_t from a backlog that grows with each evaluation: depends on earlier
// draws.  Still unbiased, and Vhat still estimates the spread.
TEST(HorvitzThompson, BacklogDrivenProbabilitiesStayUnbiased) {
  const std::vector<double> r = Terms(400, 5);
  const int n = 4000;
  const Summary s = Replicate(r, /*backlog=*/true, 0.0, n, 6);
  const double y = Sum(r);
  // The design did thin the sample (else this test shows nothing).
  EXPECT_LT(s.mean_evaluated, 0.5 * r.size());
  EXPECT_GT(s.mean_evaluated, 0.05 * r.size());
  EXPECT_NEAR(s.mean, y, 4.0 * std::sqrt(s.variance / n)) << "Y = " << y;
  EXPECT_NEAR(s.mean_vhat / s.variance, 1.0, 0.1);
  EXPECT_LT(s.mean_plain, 0.6 * y);  // the plain sum is far off
}

TEST(HorvitzThompson, LeftOutTermsAddNothingAndTheSlotsGrowTheSums) {
  RunningMetrics running;
  running.sums = {7.0};  // a class's own sum at slot 0 is kept
  const SampleSlots slots{1, 2, 3};
  AddSampledTerm(std::nullopt, 0.5, slots, &running);
  EXPECT_EQ(running.sums.size(), 1u);
  AddSampledTerm(2.0, 0.5, slots, &running);
  ASSERT_EQ(running.sums.size(), 4u);
  EXPECT_EQ(running.sums[0], 7.0);
  EXPECT_EQ(running.sums[2], 4.0);  // 2 / 0.5
  EXPECT_EQ(running.sums[3], 8.0);  // (1 - 0.5) / 0.25 * 4
  AddSkippedStep(slots, &running);
  EXPECT_EQ(running.sums[1], 1.0);
  EXPECT_EQ(StandardError(-1e-18), 0.0);
  EXPECT_EQ(StandardError(4.0), 2.0);
}

}  // namespace
}  // namespace f2obo
