// Replies as servers wrote them before RoundReport, ExactMetrics and
// RunningMetrics had their problem_class oneof (old_layout.proto, a copy of
// those messages then): for the tests that an older server's stored and
// exported replies still read (f2obo/v1/wire_upgrade.h).
#ifndef F2OBO_TESTS_PROTO_F2OBO_V1_OLD_LAYOUT_H_
#define F2OBO_TESTS_PROTO_F2OBO_V1_OLD_LAYOUT_H_

#include <string>

#include "f2obo/v1/f2obo.pb.h"
#include "proto/f2obo/v1/old_layout.pb.h"

namespace f2obo::test {

// `reply` as an older server wrote it: each field under its name in the old
// messages, the bilevel part's at the top level of its message, the
// multi-task part's shared fields (lambda, ..., regret_term, blreg) at the
// top level too and its `converged` as both inner_converged and
// cg_converged, as the old multi-task wire did.  Adds to `failures` the
// name of any field with no place in the old layout.
old_layout::StepReply ToOldLayout(const v1::StepReply& reply, std::string* failures);

// The bytes of ToOldLayout(reply) read by this server as a v1::StepReply:
// what its store or an import hands it (the old top-level fields unknown).
v1::StepReply ReadOldLayout(const v1::StepReply& reply, std::string* failures);

}  // namespace f2obo::test

#endif  // F2OBO_TESTS_PROTO_F2OBO_V1_OLD_LAYOUT_H_
