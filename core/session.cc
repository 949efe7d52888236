#include "core/session.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/algorithm_registry.h"
#include "core/family_registry.h"

namespace f2obo {
namespace {

struct Parts {
  std::unique_ptr<Family> family;
  std::unique_ptr<Algorithm> algorithm;
};

absl::StatusOr<Parts> Build(const SessionConfig& c) {
  Parts p;
  absl::StatusOr<std::unique_ptr<Family>> family = CreateFamily(c.family);
  if (!family.ok()) return family.status();
  p.family = *std::move(family);
  const int d1 = p.family->x_dim(), d2 = p.family->y_dim();
  if (absl::Status s = c.constraint.Validate(d1); !s.ok()) return s;
  if (absl::Status s = p.family->ValidateConstraint(c.constraint); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<Algorithm>> algorithm =
      CreateAlgorithm(AlgorithmContext{c.algorithm, c.options, c.constraint, d1, d2});
  if (!algorithm.ok()) return algorithm.status();
  p.algorithm = *std::move(algorithm);
  return p;
}

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

absl::Status CheckVector(const Vector& v, int dim, const char* field) {
  if (v.size() != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": has ", v.size(), " entries, expected ", dim));
  }
  if (!v.allFinite()) return absl::InvalidArgumentError(absl::StrCat(field, ": not finite"));
  return absl::OkStatus();
}

absl::StatusOr<SessionState> InitialState(const SessionConfig& c, const Family& f) {
  const int d1 = f.x_dim(), d2 = f.y_dim();
  SessionState s;
  if (c.x0.size() == 0) {
    s.x = Vector::Zero(d1);
    c.constraint.Project(&s.x);
  } else {
    if (absl::Status st = CheckVector(c.x0, d1, "initial.x"); !st.ok()) return st;
    if (!c.constraint.Contains(c.x0, 1e-12)) {
      return absl::InvalidArgumentError("initial.x: outside the constraint set X");
    }
    s.x = c.x0;
  }
  s.y = c.y0.size() == 0 ? Vector::Zero(d2) : c.y0;
  if (absl::Status st = CheckVector(s.y, d2, "initial.y"); !st.ok()) return st;
  s.z = c.z0.size() == 0 ? s.y : c.z0;
  if (absl::Status st = CheckVector(s.z, d2, "initial.z"); !st.ok()) return st;
  s.t = 1;
  s.lambda = c.options.lambda1;
  s.rng = Rng(c.seed);
  return s;
}

}  // namespace

absl::Status ValidateSessionConfig(const SessionConfig& config) {
  absl::StatusOr<Parts> parts = Build(config);
  if (!parts.ok()) return parts.status();
  return InitialState(config, *parts->family).status();
}

absl::StatusOr<std::unique_ptr<Session>> Session::Create(const SessionConfig& config) {
  absl::StatusOr<Parts> parts = Build(config);
  if (!parts.ok()) return parts.status();
  absl::StatusOr<SessionState> state = InitialState(config, *parts->family);
  if (!state.ok()) return state.status();
  return std::unique_ptr<Session>(new Session(config, std::move(parts->family),
                                              std::move(parts->algorithm),
                                              *std::move(state)));
}

absl::StatusOr<std::unique_ptr<Session>> Session::Restore(const SessionConfig& config,
                                                          SessionState state) {
  absl::StatusOr<Parts> parts = Build(config);
  if (!parts.ok()) return parts.status();
  if (absl::Status s = ValidateState(state, parts->family->x_dim(), parts->family->y_dim(),
                                     AlgorithmReadsLambda(config.algorithm));
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<Session>(new Session(config, std::move(parts->family),
                                              std::move(parts->algorithm),
                                              std::move(state)));
}

absl::StatusOr<StepReport> Session::Step(const StepData& data) {
  absl::StatusOr<StepReport> report = Prepare(data);
  if (report.ok()) Commit();
  return report;
}

void Session::Commit() {
  if (!has_pending_) return;
  std::swap(state_, scratch_);
  has_pending_ = false;
}

absl::StatusOr<StepReport> Session::Prepare(const StepData& data) {
  has_pending_ = false;
  // t + 1 must stay a restorable index (ValidateState: t <= 2^53).
  if (state_.t >= kMaxStepIndex) {
    return absl::OutOfRangeError(absl::StrCat(
        "step ", state_.t, ": the step counter is at its maximum; session state unchanged"));
  }
  if (absl::Status s = family_->ValidateBatch(data.upper, BatchRole::kUpper); !s.ok()) {
    return s;
  }
  if (absl::Status s = family_->ValidateBatch(data.inner, BatchRole::kInner); !s.ok()) {
    return s;
  }
  const auto start = std::chrono::steady_clock::now();
  family_->Prepare(data);
  StepReport report;
  report.t = state_.t;
  report.hypergradient.resize(family_->x_dim());
  const BatchView upper = BatchView::All(data.upper);
  report.upper_loss_before = family_->F(state_.x, state_.y, upper, nullptr, nullptr);
  // With finite, validated inputs f_t can still overflow (huge features times
  // the current y exceed DBL_MAX); a non-finite loss would otherwise be
  // reported as if it were a measurement, so the step is refused here.
  if (!std::isfinite(report.upper_loss_before)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step ", state_.t, ": non-finite f_t(x_t, y_t) = ", report.upper_loss_before,
        " on the upper batch (feature values too large for the current point?); "
        "session state unchanged"));
  }
  report.accuracy_before = family_->Accuracy(state_.x, state_.y, upper);

  scratch_ = state_;
  if (absl::Status s = algorithm_->Round(data, *family_, &scratch_, &report); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("step ", state_.t, ": ", s.message(),
                                               "; session state unchanged"));
  }
  if (!scratch_.AllFinite() || !report.hypergradient.allFinite()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "step ", state_.t, ": the round produced a non-finite ",
        !report.hypergradient.allFinite() ? "hypergradient"
        : !scratch_.x.allFinite()         ? "x"
        : !scratch_.y.allFinite()         ? "y"
        : !scratch_.z.allFinite()         ? "z"
                                          : "lambda",
        " (step sizes too large for this batch?); session state unchanged"));
  }
  scratch_.t = state_.t + 1;
  scratch_.inner_iterations = SaturatingAdd(
      scratch_.inner_iterations,
      static_cast<int64_t>(report.z_iterations) + report.y_iterations);
  scratch_.cap_hits = SaturatingAdd(scratch_.cap_hits, report.cap_hit ? 1 : 0);
  scratch_.rows_processed = SaturatingAdd(scratch_.rows_processed, report.rows_processed);
  has_pending_ = true;
  report.round_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace f2obo
