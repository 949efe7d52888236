// C++ client of f2obo.v1.F2obo.  Unary calls return absl::StatusOr; Step
// retries transient failures (UNAVAILABLE, DEADLINE_EXCEEDED) with
// exponential backoff, which is safe because the server applies each step
// index exactly once and answers a retried index from its reply cache.
//
// Thread-safety: a Client may be shared by threads (gRPC stubs are).
#ifndef F2OBO_CLIENT_CLIENT_H_
#define F2OBO_CLIENT_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "f2obo/v1/f2obo.grpc.pb.h"

namespace f2obo::client {

struct ClientOptions {
  std::string target = "127.0.0.1:50051";
  int max_attempts = 6;  // per Step, including the first
  double initial_backoff_seconds = 0.05;
  // Backoff doubles per attempt up to this.  UNAVAILABLE covers a replica
  // restarting and a session being moved to another replica (its old owner
  // answers "session '<id>' is moving to replica '<name>' ...; retry"
  // until the proxy routes it to the new one): raise max_attempts to ride
  // out a rebalance.
  double max_backoff_seconds = 1.0;
  // The "moved" status (UNAVAILABLE "session '<id>' is moving to replica
  // '<name>' ...; retry", the proto's SetFence: IsMoved) lasts from a
  // rebalance's fence until the proxy routes the key to its new owner,
  // i.e. steps 4-5 of deploy/README.md's runbook: as long as the whole
  // `f2obo-cli rebalance` run.  Step and StepGroup keep retrying it (same
  // step index, backoff up to max_backoff_seconds) for this long, without
  // counting it against max_attempts, which then only bounds other
  // failures (a replica down).  0: "moved" counts as any UNAVAILABLE.
  double moved_retry_seconds = 300;
  double rpc_timeout_seconds = 120;  // per attempt
  int max_message_bytes = 64 << 20;
  // Sent as "authorization: Bearer <token>" on every call when set.
  std::string token = "";
  // TLS: PEM contents.  Setting root_certs (or tls = true to use the
  // system roots) switches the channel to TLS; cert_chain + private_key
  // present a client certificate (mTLS).
  bool tls = false;
  std::string root_certs = "";
  std::string cert_chain = "";
  std::string private_key = "";
  std::string tls_target_name = "";  // override the name checked in the server cert
  // Adds "x-f2obo-session: <routing key>" metadata to session-scoped calls,
  // for a proxy that routes by session (client/session_routing.h).
  bool session_header = true;
};

// The status of a call.  A stream reset by a proxy whose upstream died
// (nginx resets the client's stream with RST_STREAM INTERNAL_ERROR when the
// replica behind it is killed: gRPC's INTERNAL "Received RST_STREAM with
// error code 2") becomes UNAVAILABLE: the transport broke, the server said
// nothing, and steps are idempotent by index, so it is retried and resumed
// like a dropped connection.  gRPC's bare RESOURCE_EXHAUSTED
// "... message larger than max (N vs. M)" gains what to do (raise this
// client's max_message_bytes or the server's --max_message_bytes).  Every
// other status is as received.
absl::Status FromGrpc(const grpc::Status& status);
// Whether `status` is such a reset (what FromGrpc turns into UNAVAILABLE).
bool IsProxyReset(const grpc::Status& status);
// True for the "moved" status: a replica refusing a session of a routing
// key it has fenced (moving to another replica); the same call succeeds
// once the proxy routes the key to its new owner.
bool IsMoved(const absl::Status& status);

class Client {
 public:
  explicit Client(ClientOptions options);

  absl::StatusOr<v1::SessionInfo> CreateSession(const v1::CreateSessionRequest& req);
  absl::StatusOr<v1::SessionInfo> GetSession(const std::string& id);
  absl::StatusOr<v1::ListSessionsResponse> ListSessions();
  absl::Status DeleteSession(const std::string& id);
  absl::StatusOr<v1::Decision> GetDecision(const std::string& id);
  absl::StatusOr<v1::StepReply> Step(const v1::StepRequest& req);
  // Side-by-side groups.  StepGroup retries like Step (each member applies
  // an index once; a retried index answers from the members' reply caches).
  absl::StatusOr<v1::GroupInfo> CreateGroup(const v1::CreateGroupRequest& req);
  absl::StatusOr<v1::GroupInfo> GetGroup(const std::string& id);
  absl::StatusOr<v1::GroupStepReply> StepGroup(const v1::GroupStepRequest& req);
  // Deletes the group and its members; not retried (like DeleteSession: a
  // retry after a lost reply would report NOT_FOUND).
  absl::StatusOr<v1::DeleteGroupResponse> DeleteGroup(const std::string& id);
  // Checkpoints, rollback and fork (see the proto).  Not retried: a
  // rollback retried after a lost reply would also undo the steps applied
  // since, and a retried fork would report ALREADY_EXISTS.
  absl::StatusOr<v1::SessionInfo> CheckpointSession(const std::string& id);
  absl::StatusOr<v1::SessionInfo> RollbackSession(const std::string& id, int64_t to_t);
  absl::StatusOr<v1::SessionInfo> ForkSession(const v1::ForkSessionRequest& req);
  // True when the standard health service reports SERVING.
  absl::StatusOr<bool> Healthy(const std::string& service = "");

  v1::F2obo::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  // A context with the per-attempt deadline applied.
  std::unique_ptr<grpc::ClientContext> NewContext() const;

 private:
  ClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::F2obo::Stub> stub_;
};

}  // namespace f2obo::client

#endif  // F2OBO_CLIENT_CLIENT_H_
