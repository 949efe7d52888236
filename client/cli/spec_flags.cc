// Session spec flags (create, stream --create, loadgen) and the
// CreateSessionRequest built from them.  Option flags left unset take the
// algorithm's defaults on the server (GetSession reports them filled in).
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"
#include "client/data/dataset.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/options_convert.h"

// One flag per algorithm option, generated from core/options.def (name,
// help); choices are string flags (empty: unset).
namespace f2obo::cli {
template <typename T>
struct OptionFlag {
  using type = std::optional<T>;
};
template <>
struct OptionFlag<BetaScaling> {
  using type = std::string;
};
template <>
struct OptionFlag<InnerSchedule> {
  using type = std::string;
};
template <>
struct OptionFlag<GammaSchedule> {
  using type = std::string;
};
template <>
struct OptionFlag<LambdaSchedule> {
  using type = std::string;
};
}  // namespace f2obo::cli
using f2obo::BetaScaling;  // the enum option types, as options.def names them
using f2obo::GammaSchedule;
using f2obo::InnerSchedule;
using f2obo::LambdaSchedule;
#define F2OBO_OPTION(option_type, name, def, rule, help) \
  ABSL_FLAG(f2obo::cli::OptionFlag<option_type>::type, name, {}, help);
#include "core/options.def"
#undef F2OBO_OPTION

namespace f2obo::cli {
namespace {

absl::Status SetX0(v1::SessionSpec* spec) {
  const std::string text = absl::GetFlag(FLAGS_x0);
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> vn = absl::StrSplit(part, absl::MaxSplits('*', 1));
    double v = 0;
    int n = 1;
    if (!absl::SimpleAtod(vn[0], &v) || (vn.size() == 2 && !absl::SimpleAtoi(vn[1], &n)) || n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--x0: '", part, "' is not a number or 'value*count'"));
    }
    for (int i = 0; i < n; ++i) spec->add_x0(v);
  }
  return absl::OkStatus();
}

// --constraint=kind:params (see its help).
absl::Status SetConstraintFromSpec(const std::string& text, v1::ConstraintSpec* c) {
  const std::vector<std::string> kp = absl::StrSplit(text, absl::MaxSplits(':', 1));
  const std::string& kind = kp[0];
  std::vector<double> values;
  if (kp.size() == 2) {
    for (absl::string_view v : absl::StrSplit(kp[1], ',')) {
      double d = 0;
      if (!absl::SimpleAtod(v, &d)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--constraint: '", v, "' in '", text, "' is not a number"));
      }
      values.push_back(d);
    }
  }
  const auto want = [&](size_t n, const char* form) -> absl::Status {
    if (values.size() == n) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("--constraint: '", text, "' is not '", form, "'"));
  };
  if (kind == "none" || kind == "orthant") {
    if (absl::Status s = want(0, kind.c_str()); !s.ok()) return s;
    if (kind == "none") {
      c->set_unconstrained(true);
    } else {
      c->mutable_box()->add_lo(0.0);
      c->mutable_box()->add_hi(std::numeric_limits<double>::infinity());
    }
    return absl::OkStatus();
  }
  if (kind == "box") {
    if (absl::Status s = want(2, "box:lo,hi"); !s.ok()) return s;
    c->mutable_box()->add_lo(values[0]);
    c->mutable_box()->add_hi(values[1]);
    return absl::OkStatus();
  }
  if (kind == "ball" || kind == "l1_ball" || kind == "simplex") {
    if (absl::Status s = want(1, (kind + ":r").c_str()); !s.ok()) return s;
    if (kind == "ball") c->mutable_ball()->set_radius(values[0]);
    if (kind == "l1_ball") c->mutable_l1_ball()->set_radius(values[0]);
    if (kind == "simplex") c->mutable_simplex()->set_total(values[0]);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--constraint: unknown set '", kind, "'; known: box, ball, l1_ball, simplex, orthant, none"));
}

absl::Status SetConstraint(v1::ConstraintSpec* c) {
  if (const std::string spec = absl::GetFlag(FLAGS_constraint); !spec.empty()) {
    if (!absl::GetFlag(FLAGS_box).empty()) {
      return absl::InvalidArgumentError("--box and --constraint: give one of them");
    }
    return SetConstraintFromSpec(spec, c);
  }
  const std::string box = absl::GetFlag(FLAGS_box);
  // Neither flag: no constraint is sent and the server applies the
  // family's default (core/problem_registry.h), as for every client.
  if (box.empty()) return absl::OkStatus();
  if (box == "none") {
    c->set_unconstrained(true);
    return absl::OkStatus();
  }
  const std::vector<std::string> parts = absl::StrSplit(box, ',');
  double lo = 0, hi = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &lo) || !absl::SimpleAtod(parts[1], &hi)) {
    return absl::InvalidArgumentError(absl::StrCat("--box: '", box, "' is not 'lo,hi' or 'none'"));
  }
  c->mutable_box()->add_lo(lo);
  c->mutable_box()->add_hi(hi);
  return absl::OkStatus();
}

// Writes the option flags set on the command line into `o`, as text parsed
// by the proto field's type (so every option takes the same path as
// --member=name:algorithm:key=value).
template <typename T>
absl::Status SetFromFlag(const char* name, const std::optional<T>& v, v1::AlgorithmOptions* o) {
  if (!v.has_value()) return absl::OkStatus();
  if constexpr (std::is_same_v<T, bool>) {
    return SetOptionFromText(name, *v ? "true" : "false", o);
  } else if constexpr (std::is_floating_point_v<T>) {
    return SetOptionFromText(name, absl::StrFormat("%.17g", *v), o);
  } else {
    return SetOptionFromText(name, absl::StrCat(*v), o);
  }
}
absl::Status SetFromFlag(const char* name, const std::string& v, v1::AlgorithmOptions* o) {
  return v.empty() ? absl::OkStatus() : SetOptionFromText(name, v, o);
}

}  // namespace

absl::Status OptionsFromFlags(v1::AlgorithmOptions* o) {
#define F2OBO_OPTION(type, name, def, rule, help) \
  if (absl::Status s = SetFromFlag(#name, absl::GetFlag(FLAGS_##name), o); !s.ok()) return s;
#include "core/options.def"
#undef F2OBO_OPTION
  return absl::OkStatus();
}

std::vector<std::string> OptionFlagNames() {
  std::vector<std::string> names;
  for (const OptionInfo& o : OptionTable()) names.emplace_back(o.name);
  return names;
}

absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromFlags(std::optional<int> features,
                                                                std::optional<int> classes,
                                                                UnreadOptions unread) {
  v1::CreateSessionRequest req;
  req.set_session_id(absl::GetFlag(FLAGS_id));
  v1::SessionSpec* spec = req.mutable_spec();
  v1::FamilySpec* f = spec->mutable_family();
  f->set_name(absl::GetFlag(FLAGS_family));
  if (auto m = absl::GetFlag(FLAGS_tasks)) {
    // --tasks=m: the family's multi-task version.
    if (f->name().rfind("multitask_", 0) != 0) f->set_name("multitask_" + f->name());
    f->set_tasks(*m);
  }
  if (auto v = absl::GetFlag(FLAGS_max_temperature)) f->set_max_temperature(*v);
  if (auto v = absl::GetFlag(FLAGS_features)) features = v;
  if (auto v = absl::GetFlag(FLAGS_classes)) classes = v;
  if (features) f->set_features(*features);
  if (classes) f->set_classes(*classes);
  if (auto v = absl::GetFlag(FLAGS_x_dim)) f->set_x_dim(*v);
  if (auto v = absl::GetFlag(FLAGS_y_dim)) f->set_y_dim(*v);
  if (auto v = absl::GetFlag(FLAGS_mu0)) f->set_mu0(*v);
  spec->set_problem_class(absl::GetFlag(FLAGS_problem_class));
  // Empty: the class's default, chosen by the server as for every client.
  spec->set_algorithm(absl::GetFlag(FLAGS_algorithm));
  if (absl::Status s = OptionsFromFlags(spec->mutable_options()); !s.ok()) return s;
  if (absl::Status s = SetConstraint(spec->mutable_constraint()); !s.ok()) return s;
  if (absl::Status s = SetX0(spec); !s.ok()) return s;
  if (auto v = absl::GetFlag(FLAGS_seed)) spec->set_seed(*v);
  if (auto v = absl::GetFlag(FLAGS_exact_every)) spec->mutable_metrics()->set_exact_every(*v);

  // Validate locally with the same core code the server runs, so a bad flag
  // is a usage error naming the field before anything is sent.
  absl::StatusOr<SessionConfig> config = ToSessionConfig(*spec, unread);
  absl::Status valid = config.ok() ? ValidateSessionConfig(*config) : config.status();
  if (valid.ok() && spec->metrics().has_exact_every() && spec->metrics().exact_every() < 0) {
    valid = absl::InvalidArgumentError("metrics.exact_every: must be >= 0");
  }
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid session spec: ", valid.message()));
  }
  return req;
}

absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromSpecFlags(UnreadOptions unread) {
  std::optional<int> features, classes;
  if (const std::string path = absl::GetFlag(FLAGS_dataset); !path.empty()) {
    absl::StatusOr<data::Dataset> ds = data::ReadDataset(path);
    if (!ds.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--dataset: ", ds.status().message()));
    }
    features = ds->features();
    if (ds->classes > 0) classes = ds->classes;
  }
  return CreateRequestFromFlags(features, classes, unread);
}

}  // namespace f2obo::cli
