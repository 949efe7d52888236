// The f2obo.v1.F2obo gRPC service: thin handlers over SessionManager.
// Every handler runs through one wrapper that times it, maps its status in
// one place (ToGrpcStatus) and reports it to the RPC observer.
#ifndef F2OBO_SERVER_SERVICE_H_
#define F2OBO_SERVER_SERVICE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "f2obo/v1/decode_traits.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "server/auth.h"
#include "server/groups.h"
#include "server/process_memory.h"
#include "server/session_manager.h"

namespace f2obo::server {

class OracleWatchdog;  // server/oracle_stream.h
struct OraclePoints;

// What the service tells its observers (the Prometheus series).
class ServiceObserver {
 public:
  virtual ~ServiceObserver() = default;
  // Once per finished RPC (per message for the Steps stream).
  virtual void OnRpc(const char* method, grpc::StatusCode code, double seconds) = 0;
  virtual void OnSessionCreated(const std::string& id) = 0;
  virtual void OnSessionDeleted(const std::string& id) = 0;
  // Once per member of an applied group step (StepGroup, StepsGroup), with
  // that member's outcome; a group step refused as a whole is only an RPC.
  virtual void OnGroupMemberStep(grpc::StatusCode code) = 0;
  // A session rolled back to step to_t (next step to_t + 1), and one
  // created by ForkSession (also reported as created).
  virtual void OnRollback(const std::string& id, int64_t to_t) {
    (void)id;
    (void)to_t;
  }
  virtual void OnFork(const std::string& new_id) { (void)new_id; }
  // +1 when a handler (or one message of a stream, with its reply) is
  // admitted, -1 when it is done.
  virtual void OnInFlight(int delta) { (void)delta; }
};

class F2oboService final : public v1::F2obo::Service {
 public:
  // `observer` and `auth` may be null (no auth: every caller may write);
  // all must outlive the service.
  F2oboService(SessionManager* sessions, GroupManager* groups, ServiceObserver* observer,
               const TokenAuthenticator* auth)
      : sessions_(sessions), groups_(groups), observer_(observer), auth_(auth) {}

  // Server shutdown, phase 1: new RPCs and new stream messages are refused
  // with UNAVAILABLE ("server is shutting down"), watches end; rounds
  // already admitted run to completion and send their replies.
  void BeginShutdown();
  // Phase 2: waits until no admitted handler or stream round (with its
  // reply) is running, or `deadline` passes; returns whether it went idle.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);

  grpc::Status CreateSession(grpc::ServerContext*, const v1::CreateSessionRequest*,
                             v1::SessionInfo*) override;
  grpc::Status GetSession(grpc::ServerContext*, const v1::GetSessionRequest*,
                          v1::SessionInfo*) override;
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse*) override;
  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest*,
                             v1::DeleteSessionResponse*) override;
  grpc::Status Step(grpc::ServerContext*, const v1::StepRequest*, v1::StepReply*) override;
  grpc::Status Steps(grpc::ServerContext*,
                     grpc::ServerReaderWriter<v1::StepReply, v1::StepRequest>*) override;
  // server/service_oracle.cc
  grpc::Status OracleSteps(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::OracleServerMessage, v1::OracleClientMessage>*) override;
  grpc::Status GetDecision(grpc::ServerContext*, const v1::GetDecisionRequest*,
                           v1::Decision*) override;
  grpc::Status WatchMetrics(grpc::ServerContext*, const v1::WatchMetricsRequest*,
                            grpc::ServerWriter<v1::StepMetrics>*) override;
  grpc::Status ExportSession(grpc::ServerContext*, const v1::ExportSessionRequest*,
                             v1::SessionExport*) override;
  grpc::Status ImportSession(grpc::ServerContext*, const v1::ImportSessionRequest*,
                             v1::SessionInfo*) override;
  // Sessions larger than a message (transfer.proto).
  grpc::Status ExportSessionStream(grpc::ServerContext*, const v1::ExportSessionStreamRequest*,
                                   grpc::ServerWriter<v1::SessionChunk>*) override;
  grpc::Status ImportSessionStream(grpc::ServerContext*,
                                   grpc::ServerReader<v1::ImportSessionStreamRequest>*,
                                   v1::SessionInfo*) override;
  grpc::Status CheckpointSession(grpc::ServerContext*, const v1::CheckpointSessionRequest*,
                                 v1::SessionInfo*) override;
  grpc::Status RollbackSession(grpc::ServerContext*, const v1::RollbackSessionRequest*,
                               v1::SessionInfo*) override;
  grpc::Status ForkSession(grpc::ServerContext*, const v1::ForkSessionRequest*,
                           v1::SessionInfo*) override;
  grpc::Status CreateGroup(grpc::ServerContext*, const v1::CreateGroupRequest*,
                           v1::GroupInfo*) override;
  grpc::Status GetGroup(grpc::ServerContext*, const v1::GetGroupRequest*, v1::GroupInfo*) override;
  grpc::Status StepGroup(grpc::ServerContext*, const v1::GroupStepRequest*,
                         v1::GroupStepReply*) override;
  grpc::Status StepsGroup(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<v1::GroupStepReply, v1::GroupStepRequest>*) override;
  grpc::Status DeleteGroup(grpc::ServerContext*, const v1::DeleteGroupRequest*,
                           v1::DeleteGroupResponse*) override;
  grpc::Status ImportGroup(grpc::ServerContext*, const v1::ImportGroupRequest*,
                           v1::GroupInfo*) override;
  // Scale-out (server/service_scaleout.cc).
  grpc::Status GetServerInfo(grpc::ServerContext*, const v1::GetServerInfoRequest*,
                             v1::ServerInfo*) override;
  grpc::Status SetFence(grpc::ServerContext*, const v1::SetFenceRequest*, v1::Fence*) override;
  grpc::Status LiftFence(grpc::ServerContext*, const v1::LiftFenceRequest*,
                         v1::LiftFenceResponse*) override;
  grpc::Status DropFencedSessions(grpc::ServerContext*, const v1::DropFencedSessionsRequest*,
                                  v1::DropFencedSessionsResponse*) override;
  // The name GetServerInfo reports (--replica_name); set before serving.
  void set_replica_name(std::string name) { replica_name_ = std::move(name); }
  // Whether the store is shared by replicas (--store): then every replica
  // serves every session and the fences that move sessions between
  // replicas are refused (a drop would delete the one shared copy); set
  // before serving.
  void set_shared_store(bool shared) { shared_store_ = shared; }
  // The server's --max_message_bytes: the largest unary export, and what
  // bounds an exported chunk (a quarter of it at most); set before serving.
  void set_max_message_bytes(int64_t bytes) { max_message_bytes_ = bytes; }

 private:
  // Admission of one unit of work (a handler, or one message of a stream
  // with its reply): counted while alive, so that a graceful shutdown waits
  // for it; not admitted once the shutdown began.  Admission and the
  // shutdown flag share idle_mu_, so WaitIdle never misses a late entrant.
  class InFlight {
   public:
    explicit InFlight(F2oboService* service);
    ~InFlight();
    InFlight(const InFlight&) = delete;
    InFlight& operator=(const InFlight&) = delete;
    bool admitted() const { return admitted_; }

   private:
    F2oboService* const service_;
    bool admitted_ = false;
  };

  // Admits (see InFlight), then Serve()s; UNAVAILABLE once shutting down.
  // `method` is the RPC's name: the role a token needs is its declared one
  // (its option (f2obo.v1.policy); RequiredAccess in auth.h).
  // `reply` (may be null): the message the body fills, held to the
  // message limit (ReplyFits).
  grpc::Status Handle(const char* method, const grpc::ServerContext* ctx,
                      const google::protobuf::Message* request,
                      const google::protobuf::Message* reply,
                      const std::function<absl::Status()>& body);
  // Authorizes a stream of RPC `method` when it opens, before any message,
  // reported to the observer as `label` (counted as `method` it would add a
  // request and a ~0 s observation to the step latency histogram).
  grpc::Status OpenStream(const char* method, const char* label, const grpc::ServerContext* ctx);
  // Tells the observer each member's outcome of an applied group step.
  void ReportMembers(const v1::GroupStepReply& reply);
  // Authorizes, checks the bounds of `request`'s strings (if not null;
  // request_bounds.h), times `body`, holds `reply` (if not null) to the
  // message limit, maps its status, reports to the observer.
  // `label` (default: `method`) names the call to the observer.
  grpc::Status Serve(const char* method, const grpc::ServerContext* ctx,
                     const google::protobuf::Message* request,
                     const google::protobuf::Message* reply,
                     const std::function<absl::Status()>& body, const char* label = nullptr);
  // OK if `reply` fits one message (--max_message_bytes); otherwise
  // RESOURCE_EXHAUSTED saying its size and what to do, where gRPC's
  // transport would fail the call with a bare "Sent message larger than
  // max".  What the call did (a step applied, a session created) stays
  // done, and the message says so.
  absl::Status ReplyFits(const char* method, const google::protobuf::Message& reply) const;
  // The refusal of work arriving during shutdown (reported to the observer).
  grpc::Status Refuse(const char* method);
  // One oracle step opened on `stream` (service_oracle.cc): its `done`
  // message (the reply and the new y) in `out`.
  absl::Status OracleStep(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::OracleServerMessage, v1::OracleClientMessage>* stream,
      const v1::OracleStepOpen& open, OracleWatchdog* watchdog, OraclePoints* points,
      v1::OracleServerMessage* out);
  // The one loop of the step streams (Steps, StepsGroup, OracleSteps):
  // authorizes the stream when it opens (reported as `open_label`), then
  // for each message admits the round and its reply as one unit of work
  // (a step applied, and persisted, is also answered before a graceful
  // shutdown ends), serves it (Serve: `step(request, &reply)`) and writes
  // the reply.  The stream ends at the client's end (OK), when a reply
  // cannot be written (the client went away: OK), with the first message
  // that fails (its status), or on a message that could not be decoded
  // (INVALID_ARGUMENT, reported as `method`); with `stop_when_cancelled`,
  // also at a cancellation seen after a reply; with `return_free_memory`,
  // the allocator's free pages are returned after each reply.
  template <typename Request, typename Reply, typename StepFn>
  grpc::Status ServeStream(const char* method, const char* open_label, grpc::ServerContext* ctx,
                           grpc::ServerReaderWriter<Reply, Request>* stream, const StepFn& step,
                           bool stop_when_cancelled = false, bool return_free_memory = false);
  // The refusal of a stream message that could not be decoded, reported.
  grpc::Status Undecodable(const char* method, const absl::Status& refused);
  // StepGroup's and StepsGroup's step: the group's fence, the step, its
  // members' outcomes reported.
  absl::Status GroupStep(const v1::GroupStepRequest& request, grpc::ServerContext* ctx,
                         v1::GroupStepReply* out);

  SessionManager* const sessions_;
  GroupManager* const groups_;
  ServiceObserver* const observer_;
  const TokenAuthenticator* const auth_;
  std::string replica_name_;
  bool shared_store_ = false;
  int64_t max_message_bytes_ = int64_t{64} << 20;
  std::atomic<bool> shutting_down_{false};
  absl::Mutex idle_mu_;
  int in_flight_ ABSL_GUARDED_BY(idle_mu_) = 0;  // admitted work running
};

template <typename Request, typename Reply, typename StepFn>
grpc::Status F2oboService::ServeStream(const char* method, const char* open_label,
                                       grpc::ServerContext* ctx,
                                       grpc::ServerReaderWriter<Reply, Request>* stream,
                                       const StepFn& step, bool stop_when_cancelled,
                                       bool return_free_memory) {
  // Authorize the stream itself, even one that never sends a message.
  const grpc::Status allowed = OpenStream(method, open_label, ctx);
  if (!allowed.ok()) return allowed;
  Request request;
  for (;;) {
    const absl::StatusOr<bool> got = v1::ReadMessage(stream, &request);
    if (!got.ok()) return Undecodable(method, got.status());
    if (!*got) return grpc::Status::OK;  // the client's end of the stream
    const InFlight round(this);
    if (!round.admitted()) return Refuse(method);
    Reply reply;
    const grpc::Status status = Serve(method, ctx, &request, &reply,
                                      [&]() -> absl::Status { return step(request, &reply); });
    if (!status.ok()) return status;
    // No lock is held here: a slow reader only slows its own stream.  (A
    // cancelled stream ends at its next Read; ctx->IsCancelled() is asked
    // only where asked for, as in the sync API it polls the call's queue, a
    // cost comparable to a tiny step's: call_round_control.h.)
    const bool written = stream->Write(reply);
    // An oracle step's messages (megabytes of gRPC slices) freed: their
    // pages back to the OS before the client's next step (process_memory.h).
    if (return_free_memory) ReturnFreeMemory();
    if (!written) return grpc::Status::OK;
    if (stop_when_cancelled && ctx->IsCancelled()) return grpc::Status::OK;
  }
}

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SERVICE_H_
