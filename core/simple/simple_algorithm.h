// A simple bilevel algorithm: one round per time step on a session's simple
// bilevel state (core/simple/simple_state.h).  Its registry entry
// (SimpleAlgorithmEntry below, defined in the algorithm's own file and
// listed in core/simple/simple_algorithm_registry.cc) says everything else
// about it.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_ALGORITHM_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_ALGORITHM_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/algorithm_info.h"
#include "core/batch.h"
#include "core/constraint.h"
#include "core/options.h"
#include "core/round_control.h"
#include "core/simple/simple_family.h"
#include "core/simple/simple_report.h"
#include "core/simple/simple_state.h"
#include "core/state_parts.h"

namespace f2obo {

// The prequential losses of a step: f and g on the step's rows at the
// decision served before the step (StepReport::upper_loss_before; g's is
// checked for finiteness).
struct PrequentialLosses {
  double f = 0.0;
  double g = 0.0;
};

// StoppableRound: loops ask ContinueRound() once per inner iteration
// (core/round_control.h).
class SimpleAlgorithm : public StoppableRound {
 public:
  virtual ~SimpleAlgorithm() = default;
  // Runs round s->t on validated batches, updating the state in place
  // (x, decision, rng, aux) and filling `report`.  The caller passes a
  // scratch copy and commits it only if this returns OK and the result is
  // in range; an algorithm may leave the state half-written when it fails.
  // What an algorithm keeps between rounds (decoded windows) must stand for
  // the state the next round starts from, whichever that is (the committed
  // state is not always the last one a round wrote).
  // Errors need no "step t" prefix.
  virtual absl::Status Round(const StepData& data, SimpleFamily& family, SimpleVars* s,
                             SimpleReport* report) = 0;
  // Whether RoundWithPrequential can take the prequential losses from the
  // round's own reads of the step's rows (IR-SCG with a family's
  // StormPass: the decision's margins from the same walk over the rows as
  // the gradients').  SimpleProblem evaluates them before the
  // round otherwise.
  virtual bool EvaluatesPrequential(const SimpleFamily& /*family*/) const { return false; }
  // Round, and the prequential losses at s->decision as it was before the
  // round into *prequential.  Called only when EvaluatesPrequential(family).
  virtual absl::Status RoundWithPrequential(const StepData& data, SimpleFamily& family,
                                            SimpleVars* s, SimpleReport* report,
                                            PrequentialLosses* /*prequential*/) {
    return Round(data, family, s, report);
  }
  // The vectors it keeps in SessionState::aux between rounds, written at
  // t = 1 from x0 (estimators start at 0, windows empty).  A restored
  // state's aux must be accepted by ValidateAux.
  virtual StateParts InitialAux(const VecIn& x0) const = 0;
  virtual absl::Status ValidateAux(const StateParts& aux) const = 0;
  // The rows a restored state's aux holds (the windows of IR-FSCG and
  // AGM-BiO), checked by the family once, at restore (after ValidateAux
  // accepted the aux): rounds then trust them, as they only append rows
  // the family validated.  None by default.
  virtual absl::Status ValidateAuxRows(const StateParts&, const SimpleFamily&) const {
    return absl::OkStatus();
  }
  // Brings aux written by an earlier server into this layout, before
  // ValidateAux (IR-FSCG's and AGM-BiO's windows in one part each, before
  // segment parts); INVALID_ARGUMENT naming aux[i] when it fits neither.
  // Nothing to do by default.
  virtual absl::Status UpgradeAux(StateParts*) const { return absl::OkStatus(); }
};

// What a factory gets: validated options (copied) and the session's shapes.
struct SimpleAlgorithmContext {
  AlgorithmOptions options;
  ConstraintSet constraint;  // Z
  int x_dim = 0;
  bool upper_reads_rows = true;  // the family's (false: f has no rows)
};

struct SimpleAlgorithmEntry {
  AlgorithmInfo info;  // info.problem_class == ProblemClass::kSimpleBilevel
  // Builds the algorithm for validated options; may still refuse a session
  // it cannot serve (e.g. a set without an LMO for IR-SCG), INVALID_ARGUMENT
  // naming the field.
  absl::StatusOr<std::unique_ptr<SimpleAlgorithm>> (*create)(const SimpleAlgorithmContext&);
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_ALGORITHM_H_
