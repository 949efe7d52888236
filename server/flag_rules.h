// What a server flag accepts (server/server_flags.def): a rule checks a
// flag's value and names the flag when it refuses it, "--<flag>: <rule>".
#ifndef F2OBO_SERVER_FLAG_RULES_H_
#define F2OBO_SERVER_FLAG_RULES_H_

#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace f2obo::server {

class FlagRule {
 public:
  enum class Kind { kAny, kAtLeast, kFiniteAtLeast, kNotEmpty, kOneOf, kMaxBytes };

  FlagRule(Kind kind, double bound, std::vector<std::string> choices)
      : kind_(kind), bound_(bound), choices_(std::move(choices)) {}

  // `flag` is the flag's name with its dashes ("--max_sessions").
  template <typename Number, std::enable_if_t<std::is_arithmetic_v<Number>, int> = 0>
  absl::Status Check(absl::string_view flag, Number value) const {
    return CheckNumber(flag, static_cast<double>(value));
  }
  absl::Status Check(absl::string_view flag, const std::string& value) const;

 private:
  absl::Status CheckNumber(absl::string_view flag, double value) const;

  Kind kind_;
  double bound_;
  std::vector<std::string> choices_;
};

// Every value.
inline FlagRule AnyValue() { return FlagRule(FlagRule::Kind::kAny, 0, {}); }
// A number >= min ("must be >= 1").
inline FlagRule AtLeast(double min) { return FlagRule(FlagRule::Kind::kAtLeast, min, {}); }
// A finite number >= min ("must be finite and >= 0").
inline FlagRule FiniteAtLeast(double min) {
  return FlagRule(FlagRule::Kind::kFiniteAtLeast, min, {});
}
// A non-empty string ("must be set").
inline FlagRule NotEmpty() { return FlagRule(FlagRule::Kind::kNotEmpty, 0, {}); }
// One of `choices` ("'x' is not 'sync' or 'none'").
inline FlagRule OneOf(std::vector<std::string> choices) {
  return FlagRule(FlagRule::Kind::kOneOf, 0, std::move(choices));
}
// A string of at most `bytes` bytes ("300 bytes, beyond the bound of 256").
inline FlagRule MaxBytes(size_t bytes) {
  return FlagRule(FlagRule::Kind::kMaxBytes, static_cast<double>(bytes), {});
}

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_FLAG_RULES_H_
