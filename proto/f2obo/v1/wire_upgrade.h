// Replies of the layout before each problem class's fields moved into the
// problem_class oneof of RoundReport, ExactMetrics and RunningMetrics: those
// messages then held the bilevel class's fields at their top level (and a
// multi-task report, metrics or sums the fields it shares with the bilevel
// class).  The store's reply cache and exported sessions (ExportSession,
// ExportSessionStream, f2obo-cli export files) hold such replies.  The new
// messages reserve the old numbers, so those fields parse as unknown fields;
// this reads them into the class's message, whose fields keep the old
// numbers (BilevelRoundReport, BilevelExactMetrics, BilevelRunningMetrics).
#ifndef F2OBO_PROTO_F2OBO_V1_WIRE_UPGRADE_H_
#define F2OBO_PROTO_F2OBO_V1_WIRE_UPGRADE_H_

#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::v1 {

// Rewrites a reply of the old layout (its report, its latest exact metrics
// and their running sums) into the new one: the top-level fields go to the
// class's message (a part without a class is the bilevel class's, the only
// class whose part was not a sub-message); a reply of the new layout is left
// as it is.  Unknown fields of other numbers are kept.
void UpgradeStepReply(StepReply* reply);

// The same for each message on its own.
void UpgradeRoundReport(RoundReport* report);
void UpgradeExactMetrics(ExactMetrics* metrics);
void UpgradeRunningMetrics(RunningMetrics* running);

}  // namespace f2obo::v1

#endif  // F2OBO_PROTO_F2OBO_V1_WIRE_UPGRADE_H_
