#include "core/options.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace f2obo {
namespace {

// Choice names, in enum order (the wire and the CLI use the names).
template <typename T>
std::vector<std::string> ChoiceNames() {
  return {};
}
template <>
std::vector<std::string> ChoiceNames<BetaScaling>() {
  return {"scaled", "fixed"};
}
template <>
std::vector<std::string> ChoiceNames<InnerSchedule>() {
  return {"fixed", "theory"};
}
template <>
std::vector<std::string> ChoiceNames<LambdaSchedule>() {
  return {"paper", "follow"};
}
template <>
std::vector<std::string> ChoiceNames<GammaSchedule>() {
  return {"constant", "theory"};
}

template <typename T>
constexpr OptionType TypeOf() {
  if constexpr (std::is_enum_v<T>) return OptionType::kChoice;
  if constexpr (std::is_same_v<T, bool>) return OptionType::kBool;
  if constexpr (std::is_integral_v<T>) return OptionType::kInt;
  return OptionType::kDouble;
}

template <typename T>
double ToNumber(T v) {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<double>(static_cast<int>(v));
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
void FromNumber(double v, T* out) {
  if constexpr (std::is_enum_v<T>) {
    *out = static_cast<T>(static_cast<int>(v));
  } else if constexpr (std::is_same_v<T, bool>) {
    *out = v != 0.0;
  } else {
    *out = static_cast<T>(v);
  }
}

std::vector<OptionInfo> BuildTable() {
  const AlgorithmOptions defaults;
  std::vector<OptionInfo> table;
#define F2OBO_OPTION(type, name, def, rule, help)                                               \
  table.push_back(OptionInfo{Opt::name, #name, TypeOf<type>(), rule, help, ChoiceNames<type>(), \
                             ToNumber(defaults.name),                                           \
                             [](const AlgorithmOptions& o) { return ToNumber(o.name); },        \
                             [](AlgorithmOptions* o, double v) { FromNumber(v, &o->name); }});
#include "core/options.def"
#undef F2OBO_OPTION
  return table;
}

std::string Number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return absl::StrCat(v);
}

}  // namespace

bool OptionRule::Accepts(double v) const {
  if (any) return true;
  if (std::isnan(v)) return false;
  if (std::isinf(v)) return infinity_allowed && v > 0;
  if (lo_open ? !(v > lo) : !(v >= lo)) return false;
  if (hi_open ? !(v < hi) : !(v <= hi)) return false;
  return true;
}

std::vector<Opt> IterationOptions() {
  std::vector<Opt> out;
  for (const OptionInfo& info : OptionTable()) {
    if (info.rule.iterations) out.push_back(info.id);
  }
  return out;
}

std::string OptionRule::Describe() const {
  if (any) return "any value";
  std::string range;
  if (hi == kMaxOptionMagnitude && !hi_open) {
    range =
        absl::StrCat(lo_open ? "> " : ">= ", Number(lo), " and finite (at most ", Number(hi), ")");
  } else if (hi == 2147483647.0) {
    range = absl::StrCat(">= ", Number(lo));
  } else {
    range =
        absl::StrCat("in ", lo_open ? "(" : "[", Number(lo), ", ", Number(hi), hi_open ? ")" : "]");
  }
  return absl::StrCat("must be ", range, infinity_allowed ? ", or inf for none" : "");
}

const std::vector<OptionInfo>& OptionTable() {
  static const auto* table = new std::vector<OptionInfo>(BuildTable());
  return *table;
}

const OptionInfo& GetOptionInfo(Opt id) { return OptionTable()[static_cast<size_t>(id)]; }

const OptionInfo* FindOption(absl::string_view name) {
  for (const OptionInfo& info : OptionTable()) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

absl::Status SetOptionNumber(const OptionInfo& info, double v, AlgorithmOptions* o) {
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.", info.name, ": ", Number(v), " ", why));
  };
  switch (info.type) {
    case OptionType::kDouble:
      break;
    case OptionType::kInt:
      if (!(std::floor(v) == v && v >= -2147483648.0 && v <= 2147483647.0)) {
        return bad("is not a 32-bit integer");
      }
      break;
    case OptionType::kBool:
      if (v != 0.0 && v != 1.0) return bad("is not a boolean (0 or 1)");
      break;
    case OptionType::kChoice:
      return absl::InvalidArgumentError(absl::StrCat(
          "options.", info.name, ": takes a name, one of ", absl::StrJoin(info.choices, ", ")));
  }
  info.set(o, v);
  return absl::OkStatus();
}

absl::Status SetOptionChoice(const OptionInfo& info, absl::string_view value, AlgorithmOptions* o) {
  for (size_t i = 0; i < info.choices.size(); ++i) {
    if (value == info.choices[i]) {
      info.set(o, static_cast<double>(i));
      return absl::OkStatus();
    }
  }
  if (info.type != OptionType::kChoice) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.", info.name, ": takes a number, not '", value, "'"));
  }
  std::string names;
  for (absl::string_view c : info.choices) absl::StrAppend(&names, names.empty() ? "" : " | ", c);
  return absl::InvalidArgumentError(
      absl::StrCat("options.", info.name, ": '", value, "' is not one of ", names));
}

std::string OptionValueText(const OptionInfo& info, const AlgorithmOptions& o) {
  const double v = info.get(o);
  switch (info.type) {
    case OptionType::kBool:
      return v != 0.0 ? "true" : "false";
    case OptionType::kChoice:
      return std::string(info.choices[static_cast<size_t>(v)]);
    case OptionType::kInt:
      return absl::StrCat(static_cast<int64_t>(v));
    case OptionType::kDouble:
      break;
  }
  return Number(v);
}

// Options whose value is not used while a boolean option is on (an auto
// step size needs no fixed value), so their rule is not checked then.
namespace {

struct Waiver {
  Opt option;
  Opt waived_by;
};
constexpr Waiver kWaivers[] = {{Opt::alpha, Opt::alpha_auto}, {Opt::beta, Opt::beta_auto}};

bool Waived(const AlgorithmOptions& o, Opt id) {
  for (const Waiver& w : kWaivers) {
    if (w.option == id && GetOptionInfo(w.waived_by).get(o) != 0.0) return true;
  }
  return false;
}

}  // namespace

absl::Status ValidateOptions(const AlgorithmOptions& o, const OptionSet& reads) {
  for (const OptionInfo& info : OptionTable()) {
    if (!reads.Has(info.id) || Waived(o, info.id)) continue;
    const double v = info.get(o);
    if (!info.rule.Accepts(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("options.", info.name, ": ", Number(v), " ", info.rule.Describe()));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo
