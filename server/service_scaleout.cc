// Scale-out RPCs: which replica answers, and the fences that move a routing
// key's sessions to another replica (the proto documents the protocol).
#include <string>

#include "server/service.h"

namespace f2obo::server {
namespace {

// With a shared store the sessions of every replica are the same rows:
// moving a key (fence, export, import, drop) has nothing to move, and its
// drop would delete the only copy.
absl::Status RefusedOnSharedStore(const char* what) {
  return absl::FailedPreconditionError(
      std::string(what) +
      ": this server's store is shared (--store): every replica serves every session and "
      "adding or removing one moves no session; rebalancing is for the embedded store");
}

}  // namespace

grpc::Status F2oboService::GetServerInfo(grpc::ServerContext* ctx,
                                         const v1::GetServerInfoRequest* req, v1::ServerInfo* out) {
  return Handle("GetServerInfo", ctx, req, out, [&] {
    out->set_replica_name(replica_name_);
    for (const StoredFence& f : sessions_->Fences()) {
      v1::Fence* fence = out->add_fences();
      fence->set_routing_key(f.key);
      fence->set_target(f.target);
    }
    return absl::OkStatus();
  });
}

grpc::Status F2oboService::SetFence(grpc::ServerContext* ctx, const v1::SetFenceRequest* req,
                                    v1::Fence* out) {
  return Handle("SetFence", ctx, req, out, [&] {
    if (shared_store_) return RefusedOnSharedStore("SetFence");
    absl::Status s = sessions_->SetFence(req->routing_key(), req->target());
    if (s.ok()) {
      out->set_routing_key(req->routing_key());
      out->set_target(req->target());
    }
    return s;
  });
}

grpc::Status F2oboService::LiftFence(grpc::ServerContext* ctx, const v1::LiftFenceRequest* req,
                                     v1::LiftFenceResponse*) {
  return Handle("LiftFence", ctx, req, nullptr,
                [&] { return sessions_->LiftFence(req->routing_key()); });
}

grpc::Status F2oboService::DropFencedSessions(grpc::ServerContext* ctx,
                                              const v1::DropFencedSessionsRequest* req,
                                              v1::DropFencedSessionsResponse* out) {
  return Handle("DropFencedSessions", ctx, req, out, [&]() -> absl::Status {
    if (shared_store_) return RefusedOnSharedStore("DropFencedSessions");
    const std::string& key = req->routing_key();
    if (sessions_->CheckFence(key).ok()) {
      return absl::FailedPreconditionError(
          "routing key '" + key +
          "' is not fenced: only the copies of a key moved elsewhere "
          "are dropped");
    }
    // The group (its id is the key) and the lone sessions, in one store
    // transaction: a crash drops all of them or none.
    absl::StatusOr<std::vector<std::string>> deleted = groups_->DeleteKey(key, ctx->deadline());
    if (!deleted.ok()) return deleted.status();
    for (const std::string& id : *deleted) {
      if (observer_ != nullptr) observer_->OnSessionDeleted(id);
      out->add_session_ids(id);
    }
    return absl::OkStatus();
  });
}

}  // namespace f2obo::server
