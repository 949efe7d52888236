#include "server/metrics/text_format.h"

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace f2obo::metrics {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if the
// bytes there are not one (Unicode 15, table 3-7: no overlong forms, no
// surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) -> unsigned {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0x100;
  };
  const auto in = [](unsigned b, unsigned lo, unsigned hi) { return b >= lo && b <= hi; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  if (in(b0, 0xC2, 0xDF)) return in(byte(1), 0x80, 0xBF) ? 2 : 0;
  if (in(b0, 0xE0, 0xEF)) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) ? 3 : 0;
  }
  if (in(b0, 0xF0, 0xF4)) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
    return in(byte(1), lo, hi) && in(byte(2), 0x80, 0xBF) && in(byte(3), 0x80, 0xBF) ? 4 : 0;
  }
  return 0;
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // std::to_chars without a precision is the shortest round-trip form, which
  // is also what Prometheus clients print for bucket bounds ("0.005").
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

std::string EscapeHelp(absl::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(absl::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string SanitizeUtf8(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

absl::Status ValidateMetricName(absl::string_view name) {
  bool ok = !name.empty() && !IsAsciiDigit(name[0]);
  for (char c : name) {
    ok = ok && (IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_' || c == ':');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("invalid metric name \"", EscapeLabelValue(name),
                                                 "\": must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
}

absl::Status ValidateLabelName(absl::string_view name) {
  bool ok = !name.empty() && !IsAsciiDigit(name[0]);
  for (char c : name) ok = ok && (IsAsciiLetter(c) || IsAsciiDigit(c) || c == '_');
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("invalid label name \"", EscapeLabelValue(name),
                                                   "\": must match [a-zA-Z_][a-zA-Z0-9_]*"));
  }
  if (name.substr(0, 2) == "__") {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid label name \"", name, "\": names starting with \"__\" are reserved"));
  }
  return absl::OkStatus();
}

void AppendSample(absl::string_view name, const std::vector<std::string>& label_names,
                  const std::vector<std::string>& label_values, absl::string_view extra_name,
                  absl::string_view extra_value, absl::string_view value, std::string* out) {
  out->append(name.data(), name.size());
  if (!label_names.empty() || !extra_name.empty()) {
    *out += '{';
    for (size_t i = 0; i < label_names.size(); ++i) {
      if (i > 0) *out += ',';
      absl::StrAppend(out, label_names[i], "=\"", EscapeLabelValue(label_values[i]), "\"");
    }
    if (!extra_name.empty()) {
      if (!label_names.empty()) *out += ',';
      absl::StrAppend(out, extra_name, "=\"", EscapeLabelValue(extra_value), "\"");
    }
    *out += '}';
  }
  absl::StrAppend(out, " ", value, "\n");
}

}  // namespace f2obo::metrics
