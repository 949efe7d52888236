// The figures the bilevel and multi-task classes share (lambda_t, the
// regret sum BLReg, the length of y), read from whichever of the two parts
// a message carries (its problem_class); a simple bilevel one has none.
// For readers that show any class's sessions side by side (f2obo-cli's
// tables, the oracle stream's shapes).
#ifndef F2OBO_PROTO_F2OBO_V1_CLASS_FIELDS_H_
#define F2OBO_PROTO_F2OBO_V1_CLASS_FIELDS_H_

#include <cstdint>
#include <optional>

#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::v1 {

// nullopt for a simple bilevel message (a "-" in a table, not a 0 that
// reads as a value).
std::optional<double> LambdaOf(const RoundReport& r);
std::optional<double> LambdaOf(const SessionInfo& s);
std::optional<double> BlregOf(const RunningMetrics& m);
// y's length (each task's y_i for the multi-task class); 0 without a y.
int32_t YDimOf(const SessionInfo& s);

}  // namespace f2obo::v1

#endif  // F2OBO_PROTO_F2OBO_V1_CLASS_FIELDS_H_
