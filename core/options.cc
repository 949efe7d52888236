#include "core/options.h"

#include <cmath>
#include <initializer_list>

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

bool OneOf(std::string_view a, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (a == n) return true;
  return false;
}

static_assert(AlgorithmOptions::kMaxWindow == 1000, "update the window rule below");
static_assert(AlgorithmOptions::kMaxDirections == 10000, "update the pz_directions rule");
static_assert(AlgorithmOptions::kMaxExplicitDim == 2048, "update the max_explicit_dim rule");

// The second-order baselines read a different set of fields (no lambda, no
// beta); each row below applies only to the algorithms that read the field.
absl::Status ValidateBaseline(const AlgorithmOptions& o, std::string_view a) {
  const bool fixed_k = OneOf(a, {"obbo", "sobow", "sobbo"});
  const bool aid = OneOf(a, {"sobow", "aobo", "fsobo", "sogd"});
  const bool multi_step_aid = OneOf(a, {"sobow", "aobo", "fsobo"});
  const bool windowed = OneOf(a, {"obbo", "sobow", "sobbo"});
  const bool sampled = OneOf(a, {"sobbo", "sogd"});
  return FirstFailure({
      {"alpha", o.alpha_auto || PositiveFinite(o.alpha), "must be finite and > 0, or auto"},
      {"gamma", PositiveFinite(o.gamma), "must be finite and > 0"},
      {"inner_steps",
       !fixed_k || (o.inner_steps >= 1 && o.inner_steps <= o.max_inner_iterations),
       "must be in [1, max_inner_iterations]"},
      {"delta", a != "aobo" || PositiveFinite(o.delta), "must be finite and > 0"},
      {"max_inner_iterations", a != "aobo" || o.max_inner_iterations >= 1,
       "must be >= 1"},
      {"linear_system_steps",
       !multi_step_aid || (o.linear_system_steps >= 1 &&
                           o.linear_system_steps <= o.max_inner_iterations),
       "must be in [1, max_inner_iterations]"},
      {"linear_system_step", !aid || PositiveFinite(o.linear_system_step),
       "must be finite and > 0"},
      {"window",
       !windowed || (o.window >= 1 && o.window <= AlgorithmOptions::kMaxWindow),
       "must be in [1, 1000]"},
      {"momentum", a != "sogd" || (o.momentum >= 0.0 && o.momentum < 1.0),
       "must be in [0, 1)"},
      {"sample_rows", !sampled || o.sample_rows >= 1, "must be >= 1"},
  });
}

// SVRB and PZOBO / PZOBO-S (same conventions as the baselines above: no
// lambda, no beta; each row applies only to the algorithms that read it).
absl::Status ValidateVarianceReducedOrZerothOrder(const AlgorithmOptions& o,
                                                  std::string_view a) {
  const bool svrb = a == "svrb";
  return FirstFailure({
      {"alpha", o.alpha_auto || PositiveFinite(o.alpha), "must be finite and > 0, or auto"},
      {"gamma", PositiveFinite(o.gamma), "must be finite and > 0"},
      {"inner_steps",
       svrb || (o.inner_steps >= 1 && o.inner_steps <= o.max_inner_iterations),
       "must be in [1, max_inner_iterations]"},
      {"momentum", !svrb || (o.momentum >= 0.0 && o.momentum < 1.0),
       "must be in [0, 1)"},
      {"sample_rows", a == "pzobo" || o.sample_rows >= 1, "must be >= 1"},
      {"max_explicit_dim",
       !svrb || (o.max_explicit_dim >= 1 &&
                 o.max_explicit_dim <= AlgorithmOptions::kMaxExplicitDim),
       "must be in [1, 2048]"},
      {"jacobian_clip", !svrb || PositiveFinite(o.jacobian_clip),
       "must be finite and > 0"},
      {"hessian_floor", !svrb || PositiveFinite(o.hessian_floor),
       "must be finite and > 0"},
      {"pz_directions",
       svrb || (o.pz_directions >= 1 &&
                o.pz_directions <= AlgorithmOptions::kMaxDirections),
       "must be in [1, 10000]"},
      {"pz_smoothing", svrb || PositiveFinite(o.pz_smoothing), "must be finite and > 0"},
  });
}

}  // namespace

absl::Status AlgorithmOptions::Validate(std::string_view algorithm) const {
  if (OneOf(algorithm, {"svrb", "pzobo", "pzobo_s"})) {
    return ValidateVarianceReducedOrZerothOrder(*this, algorithm);
  }
  if (OneOf(algorithm, {"obbo", "sobow", "aobo", "fsobo", "sobbo", "sogd"})) {
    return ValidateBaseline(*this, algorithm);
  }
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
