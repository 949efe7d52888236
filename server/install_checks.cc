#include "server/install_checks.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/problem_registry.h"
#include "f2obo/v1/number_checks.h"

namespace f2obo::server {

// Exact metrics cost more than a round: the client's policy, else the
// problem class's default.  One rule for every way a session comes to be
// (create, import, recovery), so that an imported session without the
// field does not silently lose its metrics.
int ExactEvery(const v1::SessionSpec& spec, const Session& session) {
  if (!session.problem().HasExactMetrics()) return 0;
  if (spec.metrics().has_exact_every()) return spec.metrics().exact_every();
  return session.problem().DefaultExactEvery();
}

absl::StatusOr<SessionConfig> CheckedConfig(const Limits& limits, const v1::SessionSpec& spec,
                                            UnreadOptions unread) {
  // Every number of the spec is an input number (the proto's conventions),
  // checked before any of it is converted or allocated.
  if (absl::Status s = CheckSpecNumbers(spec, "spec"); !s.ok()) return s;
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec, unread);
  if (!config.ok()) return config.status();
  // Bound the state before anything is allocated: an upper estimate of y
  // plus x (quadratic's x_dim), in 64 bits, a negative dimension counting as
  // 0 (the families refuse those), so that no field can hide another.
  const FamilyConfig& f = config->family;
  const auto dim = [](int v) { return static_cast<int64_t>(std::max(v, 0)); };
  // A multi-task session may come to hold a y per task (tasks are checked
  // against max_tasks first, so the product stays far inside int64).
  const int64_t per_task =
      (dim(f.features) + 1) * std::max<int64_t>(dim(f.classes), 1) + dim(f.y_dim) + dim(f.x_dim);
  const int64_t y_bound =
      f.tasks > 0 && f.tasks <= limits.max_tasks ? per_task * f.tasks : per_task;
  if (f.tasks > limits.max_tasks) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.family.tasks: m = ", f.tasks,
                     " exceeds the server limit max_tasks = ", limits.max_tasks));
  }
  if (y_bound > limits.max_y_dim) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "spec.family: a session of about ", y_bound,
        " state variables (x and y) exceeds the per-session limit max_y_dim = ", limits.max_y_dim));
  }
  // Only the caps the algorithm reads: an option it ignores keeps its
  // generic default, which may exceed the server's limit (an export
  // carries only the options its algorithm reads).
  const AlgorithmOptions& o = config->options;
  const AlgorithmInfo* info = FindAlgorithm(config->algorithm);
  const auto reads = [&](Opt opt) { return info == nullptr || info->reads.Has(opt); };
  // (sf2obo's schedule cap is used by its theory schedule only.)
  const auto unused = [&](Opt id) {
    return id == Opt::max_scheduled_inner_steps && o.inner_schedule != InnerSchedule::kTheory;
  };
  for (Opt id : IterationOptions()) {
    const OptionInfo& opt = GetOptionInfo(id);
    if (!reads(id) || unused(id) || opt.get(o) <= limits.max_inner_iterations) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "options.", opt.name, " = ", opt.get(o), ": above the server limit max_inner_iterations = ",
        limits.max_inner_iterations, " (it caps every option counting iterations)"));
  }
  if (spec.metrics().has_exact_every() && spec.metrics().exact_every() < 0) {
    return absl::InvalidArgumentError("spec.metrics.exact_every: must be >= 0");
  }
  return config;
}

// The reply cache is served as it is (a retry gets the cached reply), so
// each entry is checked like the replies this server makes: oldest first,
// each index in [1, next_t) (a reply for a later index would be served,
// marked replayed, for a step never applied), x of the session's x_dim, and
// every number finite.
absl::Status CheckImportedReplies(const google::protobuf::RepeatedPtrField<v1::StepReply>& replies,
                                  const SessionState& state) {
  int64_t previous = 0;
  for (int i = 0; i < replies.size(); ++i) {
    const v1::StepReply& r = replies.Get(i);
    const std::string field = absl::StrCat("session.replies[", i, "]");
    if (r.t() < 1 || r.t() >= state.t) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".t = ", r.t(), ": outside [1, ", state.t, "), the steps the state has applied"));
    }
    if (r.t() <= previous) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".t = ", r.t(),
                       ": step indices must increase (the previous entry has t = ", previous, ")"));
    }
    previous = r.t();
    if (r.x_size() != state.x.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".x: has ", r.x_size(), " entries, expected x_dim = ", state.x.size()));
    }
    if (absl::Status s = CheckNumbers(r, field, std::numeric_limits<double>::infinity()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Named(const std::string& name, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
}

}  // namespace f2obo::server
