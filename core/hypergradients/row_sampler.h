// Mini-batches drawn from a step's batches with the session's RNG.
#ifndef F2OBO_CORE_HYPERGRADIENTS_ROW_SAMPLER_H_
#define F2OBO_CORE_HYPERGRADIENTS_ROW_SAMPLER_H_

#include <vector>

#include "core/batch.h"
#include "core/rng.h"

namespace f2obo {

// Seeded mini-batch draws (SF2OBO and the stochastic baselines):
// without replacement within a draw, from the session RNG; a draw of at
// least the batch's rows uses the whole batch and consumes no randomness
// (families without sample rows, e.g. quadratic, are always used whole).
// Each role has one index buffer: a draw invalidates the previous view of
// the same role.
class RowSampler {
 public:
  // Sizes the index buffers for this step's batches (per round, never
  // inside an inner loop).
  void Reserve(const StepData& data);
  BatchView DrawUpper(const Batch& b, int k, Rng* rng) { return Draw(b, k, rng, &up_idx_); }
  BatchView DrawInner(const Batch& b, int k, Rng* rng) { return Draw(b, k, rng, &in_idx_); }

 private:
  BatchView Draw(const Batch& b, int k, Rng* rng, std::vector<int>* idx);
  std::vector<int> perm_, up_idx_, in_idx_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_HYPERGRADIENTS_ROW_SAMPLER_H_
