// The frame the AID baselines share (AOBO, FSOBO, SOBOW, SOGD; SPEC
// section 3 "Baselines"): each moves y its own way, then all do the same
// second half of the round,
//   v_{t+1}: M steps of size eta on grad2_yy g v = grad_y f from v_t
//            (warm start in aux[0], v_1 = 0),
//   h_t = grad_x f(x_t, y_{t+1}) - grad2_xy g(x_t, y_{t+1}) v_{t+1},
//   x_{t+1} = P_X(x_t - gamma d_t) with d_t = h_t or what the algorithm
//   makes of it (a window mean, a momentum),
// and report the same fields.  The subclass keeps only what differs: its y
// moves, its views (whole batches or draws) and its direction.
#ifndef F2OBO_CORE_BILEVEL_ALGORITHMS_AID_BASELINE_H_
#define F2OBO_CORE_BILEVEL_ALGORITHMS_AID_BASELINE_H_

#include <cstdint>
#include <vector>

#include "core/bilevel/bilevel_algorithm.h"
#include "core/bilevel/bilevel_algorithm_registry.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/bilevel/hypergradients/upper_step.h"

namespace f2obo {

class AidBaseline : public BilevelAlgorithm {
 public:
  std::vector<int> AuxLayout() const override;

 protected:
  // aux layout: [0] v (d2), then `extra_aux` (each subclass's own slots).
  AidBaseline(const BilevelAlgorithmContext& ctx, const std::vector<int>& extra_aux = {});

  // v_{t+1} and h_t at (x_t, y_{t+1}) on the given views with `steps`
  // linear-system steps (h_t lands in ws_.h); adds the rows read to *rows.
  // *first (if given) says this is the session's first round: the aux slots
  // were created by this call.
  absl::Status Hypergradient(BilevelFamily& family, BilevelVars* s, const BatchView& upper,
                             const BatchView& inner, int steps, int64_t* rows,
                             bool* first = nullptr);

  // x_{t+1} = P_X(x_t - gamma direction) and the report's shared fields.
  void StepAndReport(const Vector& direction, int y_iterations, int64_t rows, BilevelVars* s,
                     BilevelReport* report);

  AlgorithmOptions o_;
  SecondOrderWorkspace ws_;
  std::vector<int> aux_layout_;  // the algorithm's own parts
  UpperStep upper_step_;         // its part after them
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_ALGORITHMS_AID_BASELINE_H_
