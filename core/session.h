// One online problem being solved: its immutable configuration, the
// problem class's half (family and algorithm, core/problem.h) and the state
// they advance.  This is the class-agnostic half: step indices, the
// transactional commit, counters, immutable snapshots and checkpoints.
//
// Thread-safety: none; the server serializes a session's steps.  The
// snapshots it hands out are immutable and may be read from any thread.
#ifndef F2OBO_CORE_SESSION_H_
#define F2OBO_CORE_SESSION_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/class_metrics.h"
#include "core/problem.h"
#include "core/session_config.h"
#include "core/state.h"
#include "core/step_report.h"

namespace f2obo {

// Numbers a round may leave in a state: a round whose result is not
// finite or exceeds this in magnitude is refused like a non-finite one, so
// that no accepted step can leave a state every later step overflows on
// (inputs are bounded by kMaxOptionMagnitude, core/options.h).
inline constexpr double kMaxStateMagnitude = 1e150;

class Session {
 public:
  // Validates everything (class, family, constraint, options, initial
  // point) and returns a session at t = 1.
  static absl::StatusOr<std::unique_ptr<Session>> Create(const SessionConfig& config);
  // Rebuilds a session from a checkpoint; refuses one whose state does not
  // fit the config (shapes, magnitudes, the class's checks) or was written
  // by another family or algorithm, naming the field.
  static absl::StatusOr<std::unique_ptr<Session>> Restore(const SessionConfig& config,
                                                          Checkpoint checkpoint);

  // Applies step state().t: validates the data (INVALID_ARGUMENT naming the
  // field), runs one round on a scratch copy and commits it only if every
  // number is in range.  On any error the state is exactly unchanged.
  // Equivalent to Prepare() followed by Commit().
  absl::StatusOr<StepReport> Step(const StepData& data);

  // Two-phase form, for callers that must make the new state durable
  // before it becomes current: Prepare() runs the round into a pending
  // state (the current state is untouched); Commit() makes it current;
  // a second Prepare() or Abort() discards it.  `control` (may be null) can
  // stop the round at any inner iteration; a stopped round fails with the
  // control's status and leaves the state unchanged like any other failure.
  absl::StatusOr<StepReport> Prepare(const StepData& data, RoundControl* control = nullptr);
  const SessionState& pending_state() const { return *pending_; }
  void Commit();
  void Abort();

  const SessionConfig& config() const { return config_; }
  ProblemClass problem_class() const { return problem_->problem_class(); }
  Problem& problem() { return *problem_; }
  const Problem& problem() const { return *problem_; }

  // The committed state, and an immutable snapshot of it that stays valid
  // (and unchanged) after later steps.
  const SessionState& state() const { return *state_; }
  std::shared_ptr<const SessionState> snapshot() const { return state_; }
  // The decision served to clients at the committed state.
  const Vector& decision() const { return problem_->Decision(*state_); }

  // Running exact-metric sums: the metrics pipeline (which computes the
  // metrics off the request path) adds each step's here.
  const RunningMetrics& metrics() const { return metrics_; }
  // `probability`: p_t, with which the step was sampled for exact metrics.
  void AddMetrics(const ClassMetrics& m, double probability = 1.0) {
    problem_->Accumulate(m, probability, &metrics_);
  }
  // A due step without exact metrics (not sampled, or failed).
  void AddSkipped() { problem_->AccumulateSkipped(&metrics_); }

  // The checkpoint encoding of `state` (the committed or the pending one)
  // with this session's family, algorithm and running sums.
  std::string Encode(const SessionState& state) const;
  // The same without the aux vectors (SerializeCheckpointHead): what the
  // store writes beside the aux parts a step changed.
  std::string EncodeHead(const SessionState& state) const;

 private:
  Session(SessionConfig config, std::unique_ptr<Problem> problem, SessionState state,
          RunningMetrics metrics);

  SessionConfig config_;
  std::unique_ptr<Problem> problem_;
  std::shared_ptr<const SessionState> state_;
  // The round's working copy; reused across steps when no snapshot of it
  // is still held elsewhere (so steady-state steps do not allocate).
  std::shared_ptr<SessionState> pending_;
  bool has_pending_ = false;
  // Whether the working copy is freed after each step instead (oracle
  // families: their rounds wait for a remote client, so a copy of the
  // state per round costs little time, and kept it would double the
  // session's memory between steps).
  bool release_pending_ = false;
  RunningMetrics metrics_;
};

// Builds and validates the problem and initial state of `config` without
// creating a session (e.g. to check a request).
absl::Status ValidateSessionConfig(const SessionConfig& config);

}  // namespace f2obo

#endif  // F2OBO_CORE_SESSION_H_
