#include "server/flag_rules.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace f2obo::server {
namespace {

absl::Status Refuse(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(flag, ": ", why));
}

}  // namespace

absl::Status FlagRule::CheckNumber(absl::string_view flag, double value) const {
  switch (kind_) {
    case Kind::kAtLeast:
      if (!(value >= bound_)) return Refuse(flag, absl::StrCat("must be >= ", bound_));
      break;
    case Kind::kFiniteAtLeast:
      if (!(value >= bound_) || !std::isfinite(value)) {
        return Refuse(flag, absl::StrCat("must be finite and >= ", bound_));
      }
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

absl::Status FlagRule::Check(absl::string_view flag, const std::string& value) const {
  switch (kind_) {
    case Kind::kNotEmpty:
      if (value.empty()) return Refuse(flag, "must be set");
      break;
    case Kind::kOneOf:
      for (const std::string& choice : choices_) {
        if (value == choice) return absl::OkStatus();
      }
      return Refuse(flag,
                    absl::StrCat("'", value, "' is not '", absl::StrJoin(choices_, "' or '"), "'"));
    case Kind::kMaxBytes:
      if (value.size() > bound_) {
        return Refuse(flag, absl::StrCat(value.size(), " bytes, beyond the bound of ",
                                         static_cast<size_t>(bound_)));
      }
      break;
    default:
      break;
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server
