// One online bilevel problem being solved: immutable configuration, the
// family and algorithm built from it, and the mutable state they advance.
//
// Thread-safety: none; the server serializes a session's steps.
#ifndef F2OBO_CORE_SESSION_H_
#define F2OBO_CORE_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/algorithm.h"
#include "core/constraint.h"
#include "core/family.h"
#include "core/options.h"
#include "core/state.h"
#include "core/step_report.h"

namespace f2obo {

struct SessionConfig {
  FamilyConfig family;
  std::string algorithm = "f2obo";
  AlgorithmOptions options;  // start from DefaultAlgorithmOptions(algorithm)
  ConstraintSet constraint;
  // Initial point.  Empty x0: the projection of 0 onto X.  Empty y0: 0.
  // Empty z0: y0.  A given x0 must lie in X.
  Vector x0, y0, z0;
  uint64_t seed = 0;
};

class Session {
 public:
  // Validates everything (family, constraint, options, initial point) and
  // returns a session at t = 1 with lambda_1 = options.lambda1.
  static absl::StatusOr<std::unique_ptr<Session>> Create(const SessionConfig& config);
  // Rebuilds a session from a checkpointed state (shapes checked).
  static absl::StatusOr<std::unique_ptr<Session>> Restore(const SessionConfig& config,
                                                          SessionState state);

  // Applies step state().t: validates both batches (INVALID_ARGUMENT naming
  // the field), runs one round on a scratch copy and commits it only if
  // every number is finite.  On any error the state is exactly unchanged.
  // Equivalent to Prepare() followed by Commit().
  absl::StatusOr<StepReport> Step(const StepData& data);

  // Two-phase form, for callers that must make the new state durable
  // before it becomes current: Prepare() runs the round into a pending
  // state (the current state is untouched); Commit() makes it current;
  // a second Prepare() or Abort() discards it.
  absl::StatusOr<StepReport> Prepare(const StepData& data);
  const SessionState& pending_state() const { return scratch_; }
  void Commit();
  void Abort() { has_pending_ = false; }

  const SessionConfig& config() const { return config_; }
  const SessionState& state() const { return state_; }
  // Running exact-metric sums live in the state; the metrics pipeline
  // (which computes them off the request path) updates them here.
  RunningMetrics* mutable_metrics() { return &state_.metrics; }
  Family& family() { return *family_; }

 private:
  Session(SessionConfig config, std::unique_ptr<Family> family,
          std::unique_ptr<Algorithm> algorithm, SessionState state)
      : config_(std::move(config)), family_(std::move(family)),
        algorithm_(std::move(algorithm)), state_(std::move(state)) {}

  SessionConfig config_;
  std::unique_ptr<Family> family_;
  std::unique_ptr<Algorithm> algorithm_;
  SessionState state_;
  SessionState scratch_;  // the round's working copy (reused across steps)
  bool has_pending_ = false;
};

// Builds and validates the family, algorithm and initial state of `config`
// without creating a session (e.g. to check a request).
absl::Status ValidateSessionConfig(const SessionConfig& config);

}  // namespace f2obo

#endif  // F2OBO_CORE_SESSION_H_
