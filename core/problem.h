// The class-specific half of a session: one implementation per problem
// class (core/problem_class.h), built from a SessionConfig by the class's
// registry entry (core/problem_registry.h).  It owns the session's family
// and algorithm and knows the shape of the class's state, report and
// metrics.  Session (core/session.h) does the class-agnostic rest: step
// indices, the transactional commit, counters, checkpoints.
//
// Thread-safety: none; a Problem belongs to one session, whose steps are
// serialized.  Its MetricsEvaluator is a separate object for the metrics
// worker (its own family instance).
#ifndef F2OBO_CORE_PROBLEM_H_
#define F2OBO_CORE_PROBLEM_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/algorithm_info.h"
#include "core/batch.h"
#include "core/class_metrics.h"
#include "core/round_control.h"
#include "core/session_config.h"
#include "core/state.h"
#include "core/step_report.h"

namespace f2obo {

// Computes a step's exact metrics off the request path.
class MetricsEvaluator {
 public:
  virtual ~MetricsEvaluator() = default;
  // Shown every step's data in step order (before Evaluate for that step,
  // when its metrics are due), for evaluators that keep a window of recent
  // rows (the simple bilevel class).  Steps whose metrics job was dropped
  // under load are not shown.
  virtual void Observe(const StepData& /*data*/) {}
  // The metrics of the step whose round started from `before` and produced
  // `report`, on that step's data; `previous` is the step before's data
  // (null at the first step, or when it was not kept).  Fails only on
  // non-finite results.
  virtual absl::StatusOr<ClassMetrics> Evaluate(const SessionState& before,
                                                const StepReport& report, const StepData& current,
                                                const StepData* previous) = 0;
};

class Problem {
 public:
  virtual ~Problem() = default;

  virtual ProblemClass problem_class() const = 0;
  virtual const AlgorithmInfo& algorithm() const = 0;
  // Entries of x (the decision's dimension).
  virtual int x_dim() const = 0;
  // Names and sizes of the class's state variables and running sums.
  virtual const StateLayout& layout() const = 0;

  // Whether its steps carry per-task batches (StepData::tasks; the
  // multi-task class).  Session::Prepare refuses a step with tasks for a
  // class that does not read them, before ValidateData.
  virtual bool reads_tasks() const { return false; }

  // Rejects a step's data the family cannot use; INVALID_ARGUMENT naming the
  // field.
  virtual absl::Status ValidateData(const StepData& data) const = 0;
  // Writes the state at t = 1 from the config's initial point: x and the
  // class's variables (the session sets t, the RNG and the counters).
  virtual absl::Status InitState(const SessionConfig& config, SessionState* s) const = 0;
  // Class checks of a state from outside (an import, a stored record) beyond
  // its shapes and magnitudes (ValidateState), e.g. a positive lambda for the
  // penalty methods, or algorithm-owned vectors of the algorithm's layout.
  virtual absl::Status ValidateRestored(const SessionState& s) const = 0;
  // Brings a state written by an earlier server into this server's layout
  // (before ValidateRestored); INVALID_ARGUMENT naming the field when it
  // fits neither.  Most classes have nothing to do.
  virtual absl::Status UpgradeRestored(SessionState* s) const {
    (void)s;
    return absl::OkStatus();
  }

  // One round on validated data: the prequential figures at `s` (the state
  // before the round), then the algorithm's round, updating `s` in place
  // and filling `report` (its class part, rows, inner iterations, cap).
  // Callers pass a scratch copy and commit it only if this returns OK and
  // the result is in range (Session::Prepare); `s` may be left half-written
  // on failure.  Errors need no "step t" prefix.  `control` (may be null)
  // can stop the round at any inner iteration (core/round_control.h).
  virtual absl::Status Round(const StepData& data, SessionState* s, StepReport* report,
                             RoundControl* control) = 0;

  // The decision served to clients at state `s` (bilevel: x_t).
  virtual const Vector& Decision(const SessionState& s) const = 0;
  // The lower-level variables at `s` after a step on `data`, which a client
  // computing f and g itself (an oracle session's) keeps in step with the
  // session without asking for them: bilevel y (of the
  // penalized problem); multi-task y_i of each task `data` carried, in its
  // order; none in the simple class (x alone).
  virtual std::vector<Vector> InnerVariables(const SessionState& s, const StepData& data) const {
    (void)s;
    (void)data;
    return {};
  }

  // Exact metrics: the default policy (every N-th step; 0 = off), an
  // evaluator for the metrics worker, and how one step's metrics add to the
  // running sums.
  virtual int DefaultExactEvery() const = 0;
  // Whether exact metrics can be computed at all (not for a family without
  // HVPs, the oracle family): a session asking for them is refused, and
  // its metrics say they are absent, not zero.
  virtual bool HasExactMetrics() const { return true; }
  virtual absl::StatusOr<std::unique_ptr<MetricsEvaluator>> NewMetricsEvaluator() const = 0;
  // Adds a step's exact metrics to the running sums; `probability`: the
  // probability p_t the step was sampled with for them (1 while the
  // metrics worker keeps up; core/metrics/sampling.h), for the
  // Horvitz-Thompson estimate of the class's regret sum.
  virtual void Accumulate(const ClassMetrics& m, double probability,
                          RunningMetrics* running) const = 0;
  // Counts a due step whose exact metrics were not computed.
  virtual void AccumulateSkipped(RunningMetrics* running) const = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_PROBLEM_H_
