// How each problem class's core values travel on the wire: one entry per
// class, each in its own file (<class>_wire.cc) and listed by one line in
// class_wire.cc, each writing its class's member of the problem_class oneof
// of RoundReport, ExactMetrics, RunningMetrics and SessionInfo.  The
// generic conversions (convert.h) dispatch here; besides, only
// wire_upgrade.h (replies of the layout before the oneofs) and
// class_fields.h (the figures two classes share) know a class's fields.
#ifndef F2OBO_PROTO_F2OBO_V1_CLASS_WIRE_H_
#define F2OBO_PROTO_F2OBO_V1_CLASS_WIRE_H_

#include "core/class_metrics.h"
#include "core/metrics/sampling.h"
#include "core/problem.h"
#include "core/state.h"
#include "core/step_report.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo {

struct ClassWire {
  ProblemClass id;
  // The class's part of a round report (StepReport::detail).
  void (*report)(const StepReport& r, v1::RoundReport* out);
  // The class's part of a step's exact metrics (not the running sums).
  void (*metrics)(const ClassMetrics& m, v1::ExactMetrics* out);
  // The running sums (RunningMetrics::sums, named by the class's layout).
  void (*running)(const RunningMetrics& running, v1::RunningMetrics* out);
  // The class's part of SessionInfo, and its fields of Decision, at state `s`.
  void (*info)(const Problem& p, const SessionState& s, v1::SessionInfo* out);
  void (*decision)(const Problem& p, const SessionState& s, v1::Decision* out);
};

// The class's entry; nullptr for a class without one (never another
// class's: tests/server/class_entries_test.cc requires one for every class).
const ClassWire* WireOf(ProblemClass c);

// The coverage and estimate every class keeps at `slots` of its sums
// (RunningMetrics.skipped_steps, .estimate, .estimate_standard_error).
void SampleRunning(const RunningMetrics& running, const SampleSlots& slots,
                   v1::RunningMetrics* out);

// How a round's smoothness constants were obtained, on the wire (bilevel
// and simple bilevel reports; defined in bilevel_wire.cc).
v1::SmoothnessSource SmoothnessSourceToProto(SmoothnessSource s);

}  // namespace f2obo

#endif  // F2OBO_PROTO_F2OBO_V1_CLASS_WIRE_H_
