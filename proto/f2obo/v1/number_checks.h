// Checks of every number in a message, whatever its fields: what a client
// sends in a spec (input numbers, core/batch.h's kMaxInputMagnitude) and
// what an import hands over as a cached reply (finite numbers).  Walking
// the descriptor, not a list of fields, means a field added to the proto
// is checked without anyone remembering to.
#ifndef F2OBO_PROTO_F2OBO_V1_NUMBER_CHECKS_H_
#define F2OBO_PROTO_F2OBO_V1_NUMBER_CHECKS_H_

#include <google/protobuf/message.h>

#include <set>
#include <string>

#include "absl/status/status.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo {

// Every double of `message` and of its sub-messages, repeated or not, must
// be finite with |v| <= `bound` (infinity: finite is enough); a field whose
// full name is in `may_be_infinite` may also be +-inf (never NaN).
// INVALID_ARGUMENT names the first offender by its path from `prefix`, e.g.
// "spec.constraint.box.lo[2]: not finite" or "session.replies[3].x[0]: ...".
absl::Status CheckNumbers(const google::protobuf::Message& message, const std::string& prefix,
                          double bound, const std::set<std::string>& may_be_infinite = {});

// The spec's rule: input numbers everywhere, except the bounds the proto
// documents as possibly infinite ("no cap", "no bound"): options.lambda_max
// and the box's lo and hi.
absl::Status CheckSpecNumbers(const v1::SessionSpec& spec, const std::string& prefix);

}  // namespace f2obo

#endif  // F2OBO_PROTO_F2OBO_V1_NUMBER_CHECKS_H_
