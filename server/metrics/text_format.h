// Building blocks of the Prometheus text exposition format 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// Kept apart from the registry so the escaping and number rules, which are
// what `promtool check metrics` is strict about, can be tested on their own.
//
// Thread-safety: every function here is pure and safe to call concurrently.
#ifndef F2OBO_SERVER_METRICS_TEXT_FORMAT_H_
#define F2OBO_SERVER_METRICS_TEXT_FORMAT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace f2obo::metrics {

// The content type a scraper expects for this format.
inline constexpr char kTextFormatContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Shortest decimal that parses back to exactly `v` ("0.005", "1", "2.5",
// "1e+21"), or "+Inf", "-Inf", "NaN" as Prometheus spells them.
std::string FormatValue(double v);

// `# HELP` text: backslash and newline are escaped, nothing else.
std::string EscapeHelp(absl::string_view help);

// Label values: backslash, double quote and newline are escaped.
std::string EscapeLabelValue(absl::string_view value);

// Returns `s` with every byte that is not part of a well-formed UTF-8
// sequence replaced by U+FFFD.  Prometheus rejects a whole scrape whose
// label values are not valid UTF-8, and label values (session ids, client
// names) can come from outside, so they are cleaned once when a series is
// created rather than trusted.
std::string SanitizeUtf8(absl::string_view s);

// Name rules of the data model.  The errors name the offending name.
//   metric names: [a-zA-Z_:][a-zA-Z0-9_:]*
//   label names:  [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved
//                 for Prometheus' internal labels)
absl::Status ValidateMetricName(absl::string_view name);
absl::Status ValidateLabelName(absl::string_view name);

// Appends one sample line `name{n1="v1",...,extra_name="extra_value"} value`
// to `out`.  The braces are left out when there are no labels at all.
// `label_values` must be as long as `label_names` and already UTF-8 clean;
// `extra_name` (used for a histogram's "le") is skipped when empty.
void AppendSample(absl::string_view name, const std::vector<std::string>& label_names,
                  const std::vector<std::string>& label_values, absl::string_view extra_name,
                  absl::string_view extra_value, absl::string_view value, std::string* out);

}  // namespace f2obo::metrics

#endif  // F2OBO_SERVER_METRICS_TEXT_FORMAT_H_
