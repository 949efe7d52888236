#include "server/service.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/decode_traits.h"
#include "server/fault_points.h"
#include "server/request_bounds.h"
#include "server/status.h"

namespace f2obo::server {
namespace {

template <typename T>
absl::Status Assign(absl::StatusOr<T> result, T* out) {
  if (!result.ok()) return result.status();
  *out = *std::move(result);
  return absl::OkStatus();
}

}  // namespace

F2oboService::InFlight::InFlight(F2oboService* service) : service_(service) {
  absl::MutexLock lock(&service_->idle_mu_);
  if (service_->shutting_down_) return;
  admitted_ = true;
  ++service_->in_flight_;
  if (service_->observer_ != nullptr) service_->observer_->OnInFlight(+1);
}

F2oboService::InFlight::~InFlight() {
  if (!admitted_) return;
  if (service_->observer_ != nullptr) service_->observer_->OnInFlight(-1);
  absl::MutexLock lock(&service_->idle_mu_);
  --service_->in_flight_;  // WaitIdle's Condition is re-evaluated on unlock
}

void F2oboService::BeginShutdown() {
  absl::MutexLock lock(&idle_mu_);
  shutting_down_ = true;
}

bool F2oboService::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  absl::MutexLock lock(&idle_mu_);
  const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(idle_mu_) { return in_flight_ == 0; };
  const absl::Duration left = absl::FromChrono(deadline - std::chrono::steady_clock::now());
  return idle_mu_.AwaitWithTimeout(absl::Condition(&idle), left);
}

grpc::Status F2oboService::Undecodable(const char* method, const absl::Status& refused) {
  const grpc::Status status = ToGrpcStatus(refused);
  if (observer_ != nullptr) observer_->OnRpc(method, status.error_code(), 0.0);
  return status;
}

grpc::Status F2oboService::Refuse(const char* method) {
  const grpc::Status status(grpc::StatusCode::UNAVAILABLE, "server is shutting down");
  if (observer_ != nullptr) observer_->OnRpc(method, status.error_code(), 0.0);
  return status;
}

grpc::Status F2oboService::Handle(const char* method, const grpc::ServerContext* ctx,
                                  const google::protobuf::Message* request,
                                  const google::protobuf::Message* reply,
                                  const std::function<absl::Status()>& body) {
  const InFlight in_flight(this);
  if (!in_flight.admitted()) return Refuse(method);
  return Serve(method, ctx, request, reply, body);
}

absl::Status F2oboService::ReplyFits(const char* method,
                                     const google::protobuf::Message& reply) const {
  const int64_t bytes = static_cast<int64_t>(reply.ByteSizeLong());
  if (bytes <= max_message_bytes_) return absl::OkStatus();
  const std::string m = method;
  const std::string raise = absl::StrCat(
      "raise --max_message_bytes on the server and max_message_bytes on the client to at least ",
      bytes);
  std::string what;
  if (m == "GetDecision") {
    what = absl::StrCat(raise,
                        " (ExportSessionStream streams the session's whole state, its decision "
                        "included, at any size)");
  } else if (m == "Step" || m == "Steps" || m == "StepGroup" || m == "StepsGroup" ||
             m == "OracleSteps") {
    what = absl::StrCat("the step WAS applied; ", raise,
                        ", then send it again with the same t: it is answered from the reply "
                        "cache");
  } else if (m == "GetSession" || m == "ListSessions" || m == "GetGroup" || m == "GetServerInfo" ||
             m == "ExportSession" || m == "WatchMetrics") {
    what = raise;
  } else {
    what = absl::StrCat("the call took effect; ", raise, " to read its result");
  }
  return absl::ResourceExhaustedError(absl::StrCat(method, ": the reply is ", bytes,
                                                   " bytes, beyond this server's "
                                                   "--max_message_bytes = ",
                                                   max_message_bytes_, ": ", what));
}

grpc::Status F2oboService::OpenStream(const char* method, const char* label,
                                      const grpc::ServerContext* ctx) {
  const InFlight in_flight(this);
  if (!in_flight.admitted()) return Refuse(label);
  const std::function<absl::Status()> nothing = [] { return absl::OkStatus(); };
  return Serve(method, ctx, nullptr, nullptr, nothing, label);
}

grpc::Status F2oboService::Serve(const char* method, const grpc::ServerContext* ctx,
                                 const google::protobuf::Message* request,
                                 const google::protobuf::Message* reply,
                                 const std::function<absl::Status()>& body, const char* label) {
  const auto start = std::chrono::steady_clock::now();
  absl::Status result = absl::OkStatus();
  if (auth_ != nullptr) {
    absl::StatusOr<Access> needed = RequiredAccess(method);
    result = needed.ok() ? auth_->Check(*ctx, *needed) : needed.status();
  }
  // Before anything looks the request's ids up (request_bounds.h).
  if (result.ok() && request != nullptr) result = CheckStringBounds(*request);
  if (result.ok()) result = body();
  if (result.ok() && reply != nullptr) result = ReplyFits(method, *reply);
  const grpc::Status status = ToGrpcStatus(result);
  if (observer_ != nullptr) {
    observer_->OnRpc(
        label != nullptr ? label : method, status.error_code(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return status;
}

void F2oboService::ReportMembers(const v1::GroupStepReply& reply) {
  if (observer_ == nullptr) return;
  for (const v1::MemberStepResult& m : reply.members()) {
    observer_->OnGroupMemberStep(static_cast<grpc::StatusCode>(m.code()));
  }
}

grpc::Status F2oboService::CreateSession(grpc::ServerContext* ctx,
                                         const v1::CreateSessionRequest* req,
                                         v1::SessionInfo* out) {
  return Handle("CreateSession", ctx, req, out, [&] {
    absl::Status s = Assign(sessions_->Create(*req, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) observer_->OnSessionCreated(out->session_id());
    return s;
  });
}

grpc::Status F2oboService::GetSession(grpc::ServerContext* ctx, const v1::GetSessionRequest* req,
                                      v1::SessionInfo* out) {
  return Handle("GetSession", ctx, req, out,
                [&] { return Assign(sessions_->Get(req->session_id()), out); });
}

grpc::Status F2oboService::ListSessions(grpc::ServerContext* ctx,
                                        const v1::ListSessionsRequest* req,
                                        v1::ListSessionsResponse* out) {
  return Handle("ListSessions", ctx, req, out, [&] {
    for (v1::SessionInfo& info : sessions_->List()) *out->add_sessions() = std::move(info);
    return absl::OkStatus();
  });
}

grpc::Status F2oboService::DeleteSession(grpc::ServerContext* ctx,
                                         const v1::DeleteSessionRequest* req,
                                         v1::DeleteSessionResponse*) {
  return Handle("DeleteSession", ctx, req, nullptr, [&] {
    if (absl::Status s = sessions_->CheckFence(req->session_id()); !s.ok()) return s;
    // refuses group members
    absl::Status s = groups_->DeleteSession(req->session_id(), ctx->deadline());
    if (s.ok() && observer_ != nullptr) observer_->OnSessionDeleted(req->session_id());
    return s;
  });
}

grpc::Status F2oboService::Step(grpc::ServerContext* ctx, const v1::StepRequest* req,
                                v1::StepReply* out) {
  return Handle("Step", ctx, req, out, [&] { return Assign(sessions_->Step(*req, ctx), out); });
}

grpc::Status F2oboService::Steps(grpc::ServerContext* ctx,
                                 grpc::ServerReaderWriter<v1::StepReply, v1::StepRequest>* stream) {
  return ServeStream("Steps", "StepsOpen", ctx, stream,
                     [&](const v1::StepRequest& req, v1::StepReply* reply) {
                       return Assign(sessions_->Step(req, ctx), reply);
                     });
}

grpc::Status F2oboService::GetDecision(grpc::ServerContext* ctx, const v1::GetDecisionRequest* req,
                                       v1::Decision* out) {
  return Handle("GetDecision", ctx, req, out,
                [&] { return Assign(sessions_->GetDecision(req->session_id()), out); });
}

grpc::Status F2oboService::WatchMetrics(grpc::ServerContext* ctx,
                                        const v1::WatchMetricsRequest* req,
                                        grpc::ServerWriter<v1::StepMetrics>* writer) {
  return Handle("WatchMetrics", ctx, req, nullptr, [&]() -> absl::Status {
    absl::StatusOr<std::shared_ptr<SessionMetrics>> channel = sessions_->Metrics(req->session_id());
    if (!channel.ok()) return channel.status();
    int64_t after = req->after_t();
    const auto cancelled = [&] { return ctx->IsCancelled() || shutting_down_.load(); };
    bool ended = false;  // until_t reached, or nothing more can come up to it
    for (;;) {
      std::optional<v1::StepMetrics> next =
          (*channel)->NextAfter(after, cancelled, req->until_t(), &ended);
      if (!next.has_value()) break;
      after = next->t();
      if (absl::Status s = ReplyFits("WatchMetrics", *next); !s.ok()) return s;
      if (!writer->Write(*next)) return absl::OkStatus();  // client went away
    }
    if (ended) return absl::OkStatus();
    if (shutting_down_) return absl::UnavailableError("server is shutting down");
    if ((*channel)->closed()) {
      // A rollback replaces the channel: the steps this watch followed
      // were abandoned, and indices from the rollback's on come again.
      absl::StatusOr<std::shared_ptr<SessionMetrics>> now = sessions_->Metrics(req->session_id());
      if (now.ok() && *now != *channel) {
        return absl::AbortedError(absl::StrCat(
            "session '", req->session_id(),
            "' was rolled back: watch again from its checkpoint (after_t = the rollback's "
            "to_t)"));
      }
      return absl::NotFoundError(absl::StrCat("session '", req->session_id(), "' was deleted"));
    }
    // The client ended its watch: the normal way a watch ends, not an
    // error (it would inflate f2obo_rpc_errors_total{code="CANCELLED"}).
    return absl::OkStatus();
  });
}

grpc::Status F2oboService::ExportSession(grpc::ServerContext* ctx,
                                         const v1::ExportSessionRequest* req,
                                         v1::SessionExport* out) {
  // The export holds the complete state: it needs a write token.
  return Handle("ExportSession", ctx, req, out, [&] {
    return Assign(sessions_->Export(req->session_id(), max_message_bytes_), out);
  });
}

grpc::Status F2oboService::ExportSessionStream(grpc::ServerContext* ctx,
                                               const v1::ExportSessionStreamRequest* req,
                                               grpc::ServerWriter<v1::SessionChunk>* writer) {
  // Chunks well under the message limit (a quarter of it), 1 MiB unless
  // asked otherwise: large enough that the per-message cost is noise,
  // small enough that neither side holds much.
  constexpr int64_t kDefaultChunk = int64_t{1} << 20, kLeast = int64_t{4} << 10;
  int64_t chunk = req->chunk_bytes() > 0 ? req->chunk_bytes() : kDefaultChunk;
  chunk = std::max(kLeast, std::min(chunk, max_message_bytes_ / 4));
  return Handle("ExportSessionStream", ctx, req, nullptr, [&] {
    int64_t sent = 0;
    // Why the stream stops early: a shutdown is told as such (UNAVAILABLE:
    // export again once the server is back), not as the client's doing.
    const auto stopped = [&] {
      if (shutting_down_.load()) {
        return absl::UnavailableError(
            absl::StrCat("server is shutting down: the export of session '", req->session_id(),
                         "' stopped after ", sent, sent == 1 ? " chunk" : " chunks",
                         "; export again once it is back"));
      }
      return absl::CancelledError("the client stopped reading the export");
    };
    return sessions_->ExportChunks(req->session_id(), chunk, [&](const v1::SessionChunk& c) {
      if (shutting_down_.load() || !writer->Write(c)) return stopped();
      ++sent;
      return FaultPoint("export_chunk_sent", req->session_id());
    });
  });
}

grpc::Status F2oboService::ImportSessionStream(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::ImportSessionStreamRequest>* reader,
    v1::SessionInfo* out) {
  const InFlight in_flight(this);
  if (!in_flight.admitted()) return Refuse("ImportSessionStream");
  return Serve("ImportSessionStream", ctx, nullptr, out, [&] {
    const auto read = [&](v1::ImportSessionStreamRequest* m) -> absl::StatusOr<bool> {
      const absl::StatusOr<bool> got = v1::ReadMessage(reader, m);
      if (!got.ok()) return got.status();  // a message that could not be decoded
      if (*got) {
        if (absl::Status s = CheckStringBounds(*m); !s.ok()) return s;
        return true;
      }
      if (ctx->IsCancelled()) {
        return absl::CancelledError("the import was cancelled by its client; nothing imported");
      }
      return false;
    };
    absl::Status s = Assign(sessions_->ImportChunks(read, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) observer_->OnSessionCreated(out->session_id());
    return s;
  });
}

grpc::Status F2oboService::ImportSession(grpc::ServerContext* ctx,
                                         const v1::ImportSessionRequest* req,
                                         v1::SessionInfo* out) {
  return Handle("ImportSession", ctx, req, out, [&] {
    absl::Status s = Assign(sessions_->Import(*req, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) observer_->OnSessionCreated(out->session_id());
    return s;
  });
}

grpc::Status F2oboService::CheckpointSession(grpc::ServerContext* ctx,
                                             const v1::CheckpointSessionRequest* req,
                                             v1::SessionInfo* out) {
  return Handle("CheckpointSession", ctx, req, out,
                [&] { return Assign(sessions_->TakeCheckpoint(req->session_id()), out); });
}

grpc::Status F2oboService::RollbackSession(grpc::ServerContext* ctx,
                                           const v1::RollbackSessionRequest* req,
                                           v1::SessionInfo* out) {
  return Handle("RollbackSession", ctx, req, out, [&] {
    bool rolled_back = false;
    absl::Status s =
        Assign(groups_->RollbackSession(req->session_id(), req->to_t(), &rolled_back), out);
    // A rollback to the current step changes nothing and is not counted.
    if (rolled_back && observer_ != nullptr) {
      observer_->OnRollback(req->session_id(), req->to_t());
    }
    return s;
  });
}

grpc::Status F2oboService::ForkSession(grpc::ServerContext* ctx, const v1::ForkSessionRequest* req,
                                       v1::SessionInfo* out) {
  return Handle("ForkSession", ctx, req, out, [&] {
    absl::Status s = Assign(sessions_->Fork(*req, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) {
      observer_->OnSessionCreated(out->session_id());
      observer_->OnFork(out->session_id());
    }
    return s;
  });
}

grpc::Status F2oboService::CreateGroup(grpc::ServerContext* ctx, const v1::CreateGroupRequest* req,
                                       v1::GroupInfo* out) {
  return Handle("CreateGroup", ctx, req, out, [&] {
    absl::Status s = Assign(groups_->Create(*req, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) {
      for (const v1::SessionInfo& m : out->members()) observer_->OnSessionCreated(m.session_id());
    }
    return s;
  });
}

grpc::Status F2oboService::ImportGroup(grpc::ServerContext* ctx, const v1::ImportGroupRequest* req,
                                       v1::GroupInfo* out) {
  return Handle("ImportGroup", ctx, req, out, [&] {
    absl::Status s = Assign(groups_->Import(*req, ctx->deadline()), out);
    if (s.ok() && observer_ != nullptr) {
      for (const v1::SessionInfo& m : out->members()) observer_->OnSessionCreated(m.session_id());
    }
    return s;
  });
}

grpc::Status F2oboService::GetGroup(grpc::ServerContext* ctx, const v1::GetGroupRequest* req,
                                    v1::GroupInfo* out) {
  return Handle("GetGroup", ctx, req, out, [&] {
    absl::Status s = Assign(groups_->Get(req->group_id()), out);
    // A group moved away: retry (as for its sessions, see SessionManager).
    if (absl::IsNotFound(s) && !sessions_->CheckFence(req->group_id()).ok()) {
      return sessions_->CheckFence(req->group_id());
    }
    return s;
  });
}

grpc::Status F2oboService::StepGroup(grpc::ServerContext* ctx, const v1::GroupStepRequest* req,
                                     v1::GroupStepReply* out) {
  return Handle("StepGroup", ctx, req, out, [&] { return GroupStep(*req, ctx, out); });
}

absl::Status F2oboService::GroupStep(const v1::GroupStepRequest& req, grpc::ServerContext* ctx,
                                     v1::GroupStepReply* out) {
  // A fenced group is refused as a whole (its members also check).
  if (absl::Status s = sessions_->CheckFence(req.group_id()); !s.ok()) return s;
  absl::Status s = Assign(groups_->Step(req, ctx), out);
  if (s.ok()) ReportMembers(*out);
  return s;
}

grpc::Status F2oboService::DeleteGroup(grpc::ServerContext* ctx, const v1::DeleteGroupRequest* req,
                                       v1::DeleteGroupResponse* out) {
  return Handle("DeleteGroup", ctx, req, out, [&]() -> absl::Status {
    if (absl::Status s = sessions_->CheckFence(req->group_id()); !s.ok()) return s;
    absl::StatusOr<std::vector<std::string>> deleted =
        groups_->Delete(req->group_id(), ctx->deadline());
    if (!deleted.ok()) return deleted.status();
    for (const std::string& id : *deleted) {
      if (observer_ != nullptr) observer_->OnSessionDeleted(id);
      out->add_session_ids(id);
    }
    return absl::OkStatus();
  });
}

grpc::Status F2oboService::StepsGroup(
    grpc::ServerContext* ctx,
    grpc::ServerReaderWriter<v1::GroupStepReply, v1::GroupStepRequest>* stream) {
  return ServeStream("StepsGroup", "StepsGroupOpen", ctx, stream,
                     [&](const v1::GroupStepRequest& req, v1::GroupStepReply* reply) {
                       return GroupStep(req, ctx, reply);
                     });
}

}  // namespace f2obo::server
