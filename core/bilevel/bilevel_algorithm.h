// A bilevel algorithm: one round per time step on a session's bilevel state
// (core/bilevel/bilevel_state.h).  Its registry entry (core/algorithm_info.h,
// listed in bilevel_algorithm_registry.cc) says everything else about it.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_H_

#include <vector>

#include "absl/status/status.h"
#include "core/batch.h"
#include "core/bilevel/bilevel_family.h"
#include "core/bilevel/bilevel_report.h"
#include "core/bilevel/bilevel_state.h"
#include "core/round_control.h"

namespace f2obo {

// StoppableRound: loops ask ContinueRound() once per inner iteration
// (core/round_control.h).
class BilevelAlgorithm : public StoppableRound {
 public:
  virtual ~BilevelAlgorithm() = default;

  // Runs round s->t on validated, prepared batches, updating the state in
  // place (x, y, z, lambda, rng, aux) and filling `report` (sized: its
  // hypergradient has x_dim entries).  The caller passes a scratch copy and
  // commits it only if this returns OK and the result is in range; an
  // algorithm may therefore leave the state half-written when it fails.
  virtual absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                             BilevelReport* report) = 0;

  // The sizes of the vectors it keeps in SessionState::aux between rounds
  // (empty: none).  A restored state must carry exactly these, or none.
  virtual std::vector<int> AuxLayout() const { return {}; }

  // Frees the y-sized scratch kept between rounds (the next Round sizes
  // it again): asked after each round of a session whose rounds wait for
  // a remote client (the oracle family), whose memory between steps
  // should be its state alone, and whose round is slow enough that an
  // allocation per round does not show.
  virtual void ReleaseScratch() {}
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_H_
