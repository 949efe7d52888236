// Every session this server holds, behind the one interface the gRPC
// service and the group manager call.  The work is done by four classes,
// each with its own header:
//   SessionTable  (session_table.h)  lookup, the id -> entry map, memory
//                                    reservations, deletion, fences;
//   StepRunner    (step_runner.h)    the one step path: Step, the streams,
//                                    oracle steps, group steps;
//   Checkpoints   (checkpoints.h)    keep, rollback, what a fork starts from;
//   Installs      (installs.h)       create, import, fork, recovery, export
//                                    and transfer in chunks.
// A session itself is a SessionEntry (session_entry.h).
//
// Thread-safety: thread-safe (see each class).  Lock order: the table's
// lock is never held while a session's lock is taken; a session's locks
// nest as session_entry.h says.
#ifndef F2OBO_SERVER_SESSION_MANAGER_H_
#define F2OBO_SERVER_SESSION_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "f2obo/v1/transfer.pb.h"
#include "grpcpp/server_context.h"
#include "server/call_round_control.h"
#include "server/checkpoints.h"
#include "server/installs.h"
#include "server/limits.h"
#include "server/metrics_pipeline.h"
#include "server/session_table.h"
#include "server/step_runner.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class SessionManager {
 public:
  // `store` may be null (in-memory sessions).  Both must outlive this.
  SessionManager(Limits limits, MetricsPipeline* pipeline, SessionStore* store)
      : limits_(limits),
        table_(&limits_, store),
        checkpoints_(&limits_, pipeline, store, &table_),
        steps_(&limits_, pipeline, store, &table_, &checkpoints_),
        installs_(&limits_, pipeline, store, &table_, &checkpoints_) {
    // A shared store's sessions are loaded when first asked for.
    if (store != nullptr && store->shared()) {
      table_.EnableLoading([this](const std::string& id) { return installs_.LoadStored(id); });
    }
  }

  // Installs (installs.h).
  absl::StatusOr<std::vector<std::string>> Recover(std::vector<StoredGroup>* groups = nullptr) {
    return installs_.Recover(groups);
  }
  absl::StatusOr<v1::SessionInfo> Create(const v1::CreateSessionRequest& request,
                                         Deadline deadline = Deadline::max()) {
    return installs_.Create(request, deadline);
  }
  absl::StatusOr<v1::SessionInfo> Import(const v1::ImportSessionRequest& request,
                                         Deadline deadline = Deadline::max()) {
    return installs_.Import(request, deadline);
  }
  absl::StatusOr<v1::SessionInfo> Fork(const v1::ForkSessionRequest& request,
                                       Deadline deadline = Deadline::max()) {
    return installs_.Fork(request, deadline);
  }
  using PersistAll = Installs::PersistAll;
  absl::StatusOr<std::vector<v1::SessionInfo>> ImportAll(
      const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
      const PersistAll& persist) {
    return installs_.ImportAll(requests, field, persist);
  }
  absl::StatusOr<std::vector<v1::SessionInfo>> CreateAll(
      const std::vector<v1::CreateSessionRequest>& requests,
      const std::function<std::string(size_t)>& name, const PersistAll& persist) {
    return installs_.CreateAll(requests, name, persist);
  }
  absl::StatusOr<v1::SessionExport> Export(const std::string& id,
                                           int64_t max_bytes = INT64_MAX) const {
    return installs_.Export(id, max_bytes);
  }
  using ChunkSink = Installs::ChunkSink;
  using ChunkSource = Installs::ChunkSource;
  absl::Status ExportChunks(const std::string& id, int64_t chunk_bytes,
                            const ChunkSink& write) const {
    return installs_.ExportChunks(id, chunk_bytes, write);
  }
  absl::StatusOr<v1::SessionInfo> ImportChunks(const ChunkSource& read,
                                               Deadline deadline = Deadline::max()) {
    return installs_.ImportChunks(read, deadline);
  }

  // The table (session_table.h).
  absl::StatusOr<v1::SessionInfo> Get(const std::string& id) const { return table_.Get(id); }
  std::vector<v1::SessionInfo> List() const { return table_.List(); }
  absl::StatusOr<v1::Decision> GetDecision(const std::string& id) const {
    return table_.GetDecision(id);
  }
  absl::StatusOr<std::shared_ptr<SessionMetrics>> Metrics(const std::string& id) const {
    return table_.Metrics(id);
  }
  // `from_store` false: the caller already removed the session from the
  // store (a group deletion removes all its members in one transaction).
  absl::Status Delete(const std::string& id, bool from_store = true,
                      Deadline deadline = Deadline::max()) {
    return table_.Remove(id, from_store, deadline);
  }
  size_t size() const { return table_.size(); }
  // Sessions loaded from a shared store on demand, and evicted, since start.
  int64_t loads() const { return table_.loads(); }
  int64_t evictions() const { return table_.evictions(); }
  // Writes that found the stored session moved on by another server and
  // were answered from it, reloaded.
  int64_t conflicts_resolved() const {
    return steps_.conflicts_resolved() + checkpoints_.conflicts_resolved();
  }
  int64_t reserved_bytes() const { return table_.reserved_bytes(); }
  static std::string RoutingKey(const std::string& id) { return SessionTable::RoutingKey(id); }
  absl::Status CheckFence(const std::string& id) const { return table_.CheckFence(id); }
  absl::Status SetFence(const std::string& key, const std::string& target) {
    return table_.SetFence(key, target);
  }
  absl::Status LiftFence(const std::string& key) { return table_.LiftFence(key); }
  std::vector<StoredFence> Fences() const { return table_.Fences(); }
  std::vector<std::string> SessionsOfKey(const std::string& key) const {
    return table_.SessionsOfKey(key);
  }

  // The step path (step_runner.h).
  absl::StatusOr<v1::StepReply> Step(const v1::StepRequest& request,
                                     const grpc::ServerContext* call = nullptr) {
    return steps_.Step(request, call);
  }
  absl::StatusOr<std::shared_ptr<const StepData>> Decode(
      const v1::Batch& upper, const v1::Batch& inner,
      const google::protobuf::RepeatedPtrField<v1::TaskBatch>& tasks) const {
    return steps_.Decode(upper, inner, tasks);
  }
  absl::StatusOr<v1::StepReply> ApplyDecoded(
      const std::string& id, int64_t t, const std::shared_ptr<const StepData>& data,
      const grpc::ServerContext* call = nullptr,
      const std::function<void(const Session&)>& applied = nullptr) {
    return steps_.ApplyDecoded(id, t, data, call, applied);
  }
  absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> ApplyAll(
      const std::string& group_id, const std::vector<std::string>& ids, int64_t t,
      const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call = nullptr) {
    return steps_.ApplyAll(group_id, ids, t, data, call);
  }
  void StopRounds() { steps_.StopRounds(); }
  const RoundStopFlags* round_stops() const { return steps_.round_stops(); }
  absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> SessionStop(
      const std::string& id) const {
    return steps_.SessionStop(id);
  }
  absl::Status ValidateBatches(const std::string& id, const StepData& data) const {
    return steps_.ValidateBatches(id, data);
  }

  // Checkpoints (checkpoints.h).
  absl::StatusOr<v1::SessionInfo> TakeCheckpoint(const std::string& id) {
    return checkpoints_.Take(id);
  }
  absl::StatusOr<v1::SessionInfo> Rollback(const std::string& id, int64_t to_t,
                                           bool* rolled_back = nullptr) {
    return checkpoints_.Rollback(id, to_t, rolled_back);
  }

  const Limits& limits() const { return limits_; }

 private:
  const Limits limits_;
  SessionTable table_;
  Checkpoints checkpoints_;
  StepRunner steps_;
  Installs installs_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_MANAGER_H_
