// Conversions between the wire contract (f2obo.v1) and core types.
// Decoding validates structure (shapes, CSR layout, enum names) and returns
// INVALID_ARGUMENT naming the field; the family then validates content.
#ifndef F2OBO_PROTO_F2OBO_V1_CONVERT_H_
#define F2OBO_PROTO_F2OBO_V1_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/class_metrics.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo {

// What becomes of an option the spec sets and its algorithm does not read.
// kRefuse: INVALID_ARGUMENT naming it (CheckOptionsRead), for a spec a user
// writes (create, fork, a client's own check).  kDrop: ignored, for a spec
// a server wrote (stored sessions, exports): servers before 2026-11-23
// wrote every option, and the ones the algorithm did not read never acted;
// an option such a spec lacks is one added since, and takes the behaviour
// the session had when it was written (lambda_schedule: paper).
enum class UnreadOptions { kRefuse, kDrop };

// Spec -> config: the class (given, or the family's), the algorithm (given,
// or the class's default) and its defaults for absent options.
absl::StatusOr<SessionConfig> ToSessionConfig(const v1::SessionSpec& spec,
                                              UnreadOptions unread = UnreadOptions::kRefuse);
// The algorithm a spec's session runs: the one named, else the class's
// default for its family; INVALID_ARGUMENT for an unknown class or family.
absl::StatusOr<std::string> AlgorithmOf(const v1::SessionSpec& spec);
// Each member's spec in a group (CreateGroupRequest): the shared spec with
// the member's algorithm (empty: the shared spec's, else the class default)
// and its options over the shared ones.  A shared option reaches the
// members whose algorithm reads it and must be read by one at least; a
// member's own options must be read by its algorithm (INVALID_ARGUMENT
// "spec.options.<name>: ..." or "members[i] (<name>): options.<name>: ...").
absl::StatusOr<std::vector<v1::SessionSpec>> GroupMemberSpecs(
    const v1::SessionSpec& shared,
    const google::protobuf::RepeatedPtrField<v1::GroupMember>& members);
// SessionSpec.x_groups (display names of x's entries, at most kMaxXGroups
// groups) cover x's x_dim entries exactly, or are absent.
inline constexpr int kMaxXGroups = 64;
absl::Status CheckXGroups(const SessionConfig& config, int x_dim);
// Config -> spec with the class and every option the algorithm reads filled
// in.
v1::SessionSpec ToSessionSpec(const SessionConfig& config, int exact_every);

// Wire batch -> core batch; `what` prefixes errors ("upper", "inner").
// Every number of every field must be finite with |v| <= kMaxInputMagnitude
// (core/batch.h), read by the family or not: INVALID_ARGUMENT names the
// field and index otherwise ("inner.c[0]: ...").
absl::StatusOr<Batch> ToBatch(const v1::Batch& batch, const std::string& what);
// Core batch -> wire batch (exact inverse of ToBatch).
void ToProto(const Batch& batch, v1::Batch* out);
// A multi-task step's task: its batches as ToBatch decodes them, `what`
// prefixing errors ("tasks[2]" -> "tasks[2].inner.c[0]: ...").  The task
// index and probability are checked by the session (they depend on m).
absl::StatusOr<TaskData> ToTask(const v1::TaskBatch& task, const std::string& what);
void ToProto(const TaskData& task, v1::TaskBatch* out);

// A round report: the fields every class has, then the class's own
// (class_wire.h).
void ToProto(const StepReport& report, v1::RoundReport* out);
// Running sums of a session of class `c`.
void ToProto(ProblemClass c, const RunningMetrics& running, v1::RunningMetrics* out);
// A step's exact metrics with the running sums after them.
void ToProto(const ClassMetrics& m, const RunningMetrics& running, v1::ExactMetrics* out);

// What GetSession / GetDecision answer for session `id` at `state` (its
// committed state, or a snapshot of it).
// `state` and `metrics`: the session's state and running sums to describe
// (a snapshot; `session` is read only for its configuration and problem).
v1::SessionInfo SessionInfoOf(const std::string& id, const Session& session,
                              const SessionState& state, const RunningMetrics& metrics,
                              int exact_every);
v1::Decision DecisionOf(const std::string& id, const Session& session, const SessionState& state);

inline Vector ToVector(const google::protobuf::RepeatedField<double>& v) {
  return Eigen::Map<const Vector>(v.data(), v.size());
}
inline void ToRepeated(const VecIn& v, google::protobuf::RepeatedField<double>* out) {
  out->Resize(static_cast<int>(v.size()), 0.0);
  Eigen::Map<Vector>(out->mutable_data(), v.size()) = v;
}

}  // namespace f2obo

#endif  // F2OBO_PROTO_F2OBO_V1_CONVERT_H_
