// Algorithm options between the wire (v1::AlgorithmOptions) and core, by
// field name: core/options.def lists the options, and each has the proto
// field of its name (tests/proto/options_convert_test.cc checks they agree).
// No option is written out here, so a new option needs no edit.
#ifndef F2OBO_PROTO_F2OBO_V1_OPTIONS_CONVERT_H_
#define F2OBO_PROTO_F2OBO_V1_OPTIONS_CONVERT_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/options.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo {

// Copies every field set in `p` into `o`; INVALID_ARGUMENT
// "options.<name>: ..." for a value of the wrong kind (an unknown choice, a
// non-integral count).  Rules are checked later (the algorithm's entry).
absl::Status ApplyOptions(const v1::AlgorithmOptions& p, AlgorithmOptions* o);
// The options `p` sets (its fields present), and clearing those in `which`.
OptionSet SetOptions(const v1::AlgorithmOptions& p);
void ClearOptions(const OptionSet& which, v1::AlgorithmOptions* p);
// Writes the options in `which` (an infinite "none" value stays absent).
void FillOptions(const AlgorithmOptions& o, const OptionSet& which, v1::AlgorithmOptions* p);
// Sets field `name` of `p` from text ("0.1", "5", "true", "scaled"), as the
// CLI's flags and --member=...:key=value do; INVALID_ARGUMENT naming the
// option for an unknown name or text of the wrong kind.
absl::Status SetOptionFromText(absl::string_view name, absl::string_view text,
                               v1::AlgorithmOptions* p);

}  // namespace f2obo

#endif  // F2OBO_PROTO_F2OBO_V1_OPTIONS_CONVERT_H_
