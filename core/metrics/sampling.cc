#include "core/metrics/sampling.h"

#include <algorithm>
#include <cmath>

namespace f2obo {

double InclusionProbability(int64_t queued, int64_t max_pending, double floor) {
  floor = std::clamp(floor, 1e-6, 1.0);
  const double half = 0.5 * static_cast<double>(std::max<int64_t>(max_pending, 1));
  const double q = static_cast<double>(queued);
  if (q <= half) return 1.0;
  if (q >= 2.0 * half) return floor;
  // Linear from 1 at half the bound to `floor` at the bound.
  const double p = 1.0 - (1.0 - floor) * (q - half) / half;
  return std::max(floor, p);
}

namespace {

void Fit(const SampleSlots& s, RunningMetrics* r) {
  const size_t need = static_cast<size_t>(std::max({s.skipped_steps, s.estimate, s.variance})) + 1;
  if (r->sums.size() < need) r->sums.resize(need, 0.0);
}

}  // namespace

void AddSampledTerm(std::optional<double> term, double probability, const SampleSlots& slots,
                    RunningMetrics* r) {
  if (!term.has_value()) return;
  Fit(slots, r);
  // p in (0, 1] by construction; a p outside it (a bug) is read as 1
  // rather than dividing by 0.
  const double p = probability > 0.0 && probability <= 1.0 ? probability : 1.0;
  r->sums[slots.estimate] += *term / p;
  r->sums[slots.variance] += (1.0 - p) / (p * p) * *term * *term;
}

void AddSkippedStep(const SampleSlots& slots, RunningMetrics* r) {
  Fit(slots, r);
  r->sums[slots.skipped_steps] += 1.0;
}

double StandardError(double variance_sum) { return std::sqrt(std::max(0.0, variance_sum)); }

}  // namespace f2obo
