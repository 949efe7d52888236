// The round OBBO and SOBBO share (Bohne et al., 2024; references [3] of
// the F2OBO paper): K inner GD steps on g from the warm start y_t, an ITD
// hypergradient backward through them, a window mean of the hypergradients
// and a projected step on x.  They differ only in the rows each derivative
// reads: OBBO the whole batch, SOBBO fresh mini-batches (see sobbo.cc for
// the draws and their order).
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_UNROLLED_ITD_ROUND_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_UNROLLED_ITD_ROUND_H_

#include <vector>

#include "core/bilevel/bilevel_algorithm.h"
#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/bilevel/hypergradients/upper_step.h"
#include "core/hypergradients/row_sampler.h"

namespace f2obo {

class UnrolledItdRound final : public BilevelAlgorithm {
 public:
  enum class Rows { kWholeBatch, kMiniBatches };

  UnrolledItdRound(const BilevelAlgorithmContext& ctx, Rows rows);

  std::vector<int> AuxLayout() const override;
  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override;

 private:
  // The rows of one inner (upper) derivative: the whole batch, or a fresh
  // draw of options.sample_rows rows from state.rng.
  BatchView Inner(const Batch& inner, Rng* rng);
  BatchView Upper(const Batch& upper, Rng* rng);

  const Rows rows_;
  AlgorithmOptions o_;
  SecondOrderWorkspace ws_;
  std::vector<Vector> iterates_;  // y^0..y^K of the current round
  HypergradientWindow window_;
  std::vector<int> aux_layout_;
  UpperStep upper_step_;
  RowSampler sampler_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_UNROLLED_ITD_ROUND_H_
