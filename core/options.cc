#include "core/options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

// One row of the validation table: a field, its value and the rule.
struct Check {
  const char* field;
  bool ok;
  const char* rule;
};

absl::Status FirstFailure(std::initializer_list<Check> checks) {
  for (const Check& c : checks) {
    if (!c.ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.", c.field, ": ", c.rule));
    }
  }
  return absl::OkStatus();
}

bool PositiveFinite(double v) { return v > 0.0 && std::isfinite(v); }
bool NonNegativeFinite(double v) { return v >= 0.0 && std::isfinite(v); }

}  // namespace

absl::Status AlgorithmOptions::Validate(std::string_view algorithm) const {
  const bool stochastic = algorithm == "sf2obo";
  const bool adaptive = algorithm == "af2obo";
  absl::Status s = FirstFailure({
      {"lambda1", PositiveFinite(lambda1), "must be finite and > 0"},
      {"tau", NonNegativeFinite(tau), "must be finite and >= 0"},
      {"lambda_max", lambda_max >= lambda1, "must be >= lambda1 (inf for no cap)"},
      {"alpha", alpha_auto || PositiveFinite(alpha), "must be finite and > 0, or auto"},
      {"beta", beta_auto || PositiveFinite(beta), "must be finite and > 0, or auto"},
      {"gamma", PositiveFinite(gamma), "must be finite and > 0"},
  });
  if (!s.ok()) return s;
  if (adaptive) {
    return FirstFailure({
        {"delta_y", PositiveFinite(delta_y), "must be finite and > 0"},
        {"delta_z", PositiveFinite(delta_z), "must be finite and > 0"},
        {"max_inner_iterations", max_inner_iterations >= 1, "must be >= 1"},
    });
  }
  s = FirstFailure({{"inner_steps",
                     inner_steps >= 1 && inner_steps <= max_inner_iterations,
                     "must be in [1, max_inner_iterations]"}});
  if (!s.ok() || !stochastic) return s;
  return FirstFailure({
      {"alpha_decay", NonNegativeFinite(alpha_decay), "a must be finite and >= 0"},
      {"beta_decay", NonNegativeFinite(beta_decay), "b must be finite and >= 0"},
      {"batch_growth", NonNegativeFinite(batch_growth), "B2 must be finite and >= 0"},
      {"hyper_batch_growth", NonNegativeFinite(hyper_batch_growth),
       "B1 must be finite and >= 0"},
      {"batch_scale", PositiveFinite(batch_scale), "must be finite and > 0"},
      {"inner_schedule_scale", PositiveFinite(inner_schedule_scale),
       "c_K must be finite and > 0"},
      {"max_scheduled_inner_steps", max_scheduled_inner_steps >= 1, "must be >= 1"},
  });
}

}  // namespace f2obo
