// An online bilevel algorithm: one round per time step on a session state.
#ifndef F2OBO_CORE_ALGORITHM_H_
#define F2OBO_CORE_ALGORITHM_H_

#include <string_view>

#include "absl/status/status.h"
#include "core/batch.h"
#include "core/family.h"
#include "core/state.h"
#include "core/step_report.h"

namespace f2obo {

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual std::string_view name() const = 0;

  // Runs round state->t on validated, prepared batches, updating `state` in
  // place (x, y, z, lambda, t, rng, counters) and filling `report`.
  // Callers pass a scratch copy and commit it only if this returns OK and
  // the result is finite (Session::Step); an algorithm may therefore leave
  // `state` half-written when it fails.
  virtual absl::Status Round(const StepData& data, Family& family,
                             SessionState* state, StepReport* report) = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_ALGORITHM_H_
