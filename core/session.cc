#include "core/session.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/oracle.h"
#include "core/problem_registry.h"

namespace f2obo {
namespace {

// Counters in the state are imported from outside (Session::Restore), so
// they can sit anywhere in int64; adding to them must not overflow (UB).
int64_t SaturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  if (b < 0 && a < std::numeric_limits<int64_t>::min() - b) {
    return std::numeric_limits<int64_t>::min();
  }
  return a + b;
}

absl::StatusOr<SessionState> InitialState(const SessionConfig& c, const Problem& p) {
  SessionState s;
  if (absl::Status st = p.InitState(c, &s); !st.ok()) return st;
  s.t = 1;
  s.rng = Rng(c.seed);
  return s;
}

RunningMetrics EmptyMetrics(const Problem& p) {
  RunningMetrics m;
  m.sums.assign(p.layout().sums.size(), 0.0);
  return m;
}

}  // namespace

Session::Session(SessionConfig config, std::unique_ptr<Problem> problem, SessionState state,
                 RunningMetrics metrics)
    : config_(std::move(config)),
      problem_(std::move(problem)),
      state_(std::make_shared<const SessionState>(std::move(state))),
      pending_(std::make_shared<SessionState>()),
      release_pending_(IsOracleFamily(config_.family.name)),
      metrics_(std::move(metrics)) {}

absl::Status ValidateSessionConfig(const SessionConfig& config) {
  absl::StatusOr<std::unique_ptr<Problem>> problem = CreateProblem(config);
  if (!problem.ok()) return problem.status();
  return InitialState(config, **problem).status();
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(const SessionConfig& config) {
  absl::StatusOr<std::unique_ptr<Problem>> problem = CreateProblem(config);
  if (!problem.ok()) return problem.status();
  absl::StatusOr<SessionState> state = InitialState(config, **problem);
  if (!state.ok()) return state.status();
  RunningMetrics metrics = EmptyMetrics(**problem);
  return std::unique_ptr<Session>(
      new Session(config, *std::move(problem), *std::move(state), std::move(metrics)));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Restore(const SessionConfig& config,
                                                          Checkpoint c) {
  absl::StatusOr<std::unique_ptr<Problem>> problem = CreateProblem(config);
  if (!problem.ok()) return problem.status();
  const Problem& p = **problem;
  if (!c.family.empty() && c.family != config.family.name) {
    return absl::InvalidArgumentError(absl::StrCat("spec.family.name: '", config.family.name,
                                                   "', but the state was written by a '", c.family,
                                                   "' session"));
  }
  if (!c.algorithm.empty() && c.algorithm != config.algorithm) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm: '", config.algorithm, "', but the state was written by '",
                     c.algorithm, "' (its algorithm-owned state has another layout)"));
  }
  if (absl::Status s = ValidateState(c.state, p.layout(), p.x_dim(), kMaxStateMagnitude); !s.ok()) {
    return s;
  }
  if (absl::Status s = p.UpgradeRestored(&c.state); !s.ok()) return s;
  if (absl::Status s = p.ValidateRestored(c.state); !s.ok()) return s;
  // Sums added by later versions of a class start at zero.
  if (c.metrics.sums.size() > p.layout().sums.size()) {
    return absl::InvalidArgumentError(absl::StrCat("state.metrics: ", c.metrics.sums.size(),
                                                   " running sums, this problem class has ",
                                                   p.layout().sums.size()));
  }
  c.metrics.sums.resize(p.layout().sums.size(), 0.0);
  if (c.metrics.evaluated_steps < 0 || c.metrics.evaluated_steps >= c.state.t) {
    return absl::InvalidArgumentError(absl::StrCat("state.metrics: ", c.metrics.evaluated_steps,
                                                   " evaluated steps at step ", c.state.t));
  }
  for (size_t i = 0; i < c.metrics.sums.size(); ++i) {
    const double v = c.metrics.sums[i];
    const RunningSumSpec& spec = p.layout().sums[i];
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat("state.metrics.", spec.name, ": not finite"));
    }
    if (spec.counts_steps &&
        (v < 0 || v > static_cast<double>(c.metrics.evaluated_steps) || v != std::floor(v))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state.metrics.", spec.name, ": ", v, " is not a step count between 0 and the ",
          c.metrics.evaluated_steps, " evaluated steps"));
    }
    const double unevaluated = static_cast<double>(c.state.t - 1 - c.metrics.evaluated_steps);
    if (spec.counts_skipped && (v < 0 || v > unevaluated || v != std::floor(v))) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.metrics.", spec.name, ": ", v, " is not a step count between 0 and ",
                       unevaluated, " (steps applied less the evaluated ones)"));
    }
  }
  return std::unique_ptr<Session>(
      new Session(config, *std::move(problem), std::move(c.state), std::move(c.metrics)));
}

absl::StatusOr<StepReport> Session::Step(const StepData& data) {
  absl::StatusOr<StepReport> report = Prepare(data);
  if (report.ok()) Commit();
  return report;
}

void Session::Commit() {
  if (!has_pending_) return;
  std::shared_ptr<SessionState> next = std::move(pending_);
  // The old state becomes the next scratch copy, unless a reader still
  // holds it (then Prepare allocates a fresh one).
  pending_ = std::const_pointer_cast<SessionState>(std::move(state_));
  state_ = std::move(next);
  has_pending_ = false;
  if (release_pending_) pending_.reset();
}

void Session::Abort() {
  has_pending_ = false;
  if (release_pending_) pending_.reset();
}

std::string Session::Encode(const SessionState& state) const {
  return SerializeState(config_.family.name, config_.algorithm, state, metrics_, /*with_aux=*/true);
}

std::string Session::EncodeHead(const SessionState& state) const {
  return SerializeState(config_.family.name, config_.algorithm, state, metrics_,
                        /*with_aux=*/false);
}

absl::StatusOr<StepReport> Session::Prepare(const StepData& data, RoundControl* control) {
  has_pending_ = false;
  const int64_t t = state_->t;
  // t + 1 must stay a restorable index (ValidateState: t <= 2^53).
  if (t >= kMaxStepIndex) {
    return absl::OutOfRangeError(
        absl::StrCat("step ", t, ": the step counter is at its maximum; session state unchanged"));
  }
  if (!data.tasks.empty() && !problem_->reads_tasks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tasks: a ", ProblemClassName(problem_->problem_class()),
        " session reads the top-level upper and inner batches; per-task batches are for "
        "multitask_bilevel sessions"));
  }
  if (absl::Status s = problem_->ValidateData(data); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  if (pending_ == nullptr || pending_.use_count() > 1) {
    pending_ = std::make_shared<SessionState>(*state_);
  } else {
    *pending_ = *state_;  // reuses the vectors' storage
  }
  StepReport report;
  report.t = t;
  if (absl::Status s = problem_->Round(data, pending_.get(), &report, control); !s.ok()) {
    if (release_pending_) pending_.reset();
    return absl::Status(s.code(),
                        absl::StrCat("step ", t, ": ", s.message(), "; session state unchanged"));
  }
  SessionState& next = *pending_;
  if (std::string field =
          next.FirstOutOfRange(problem_->layout(), kMaxStateMagnitude, state_.get());
      !field.empty()) {
    if (release_pending_) pending_.reset();
    return absl::InvalidArgumentError(
        absl::StrCat("step ", t, ": the round produced a non-finite ", field,
                     " (or one beyond the safe ", "magnitude ", kMaxStateMagnitude,
                     "; step sizes too large for this batch?); session state unchanged"));
  }
  next.t = t + 1;
  next.inner_iterations = SaturatingAdd(next.inner_iterations, report.inner_iterations);
  next.cap_hits = SaturatingAdd(next.cap_hits, report.cap_hit ? 1 : 0);
  next.rows_processed = SaturatingAdd(next.rows_processed, report.rows_processed);
  has_pending_ = true;
  report.round_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace f2obo
