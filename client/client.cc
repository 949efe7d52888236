#include "client/client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/session_routing.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace f2obo::client {

bool IsProxyReset(const grpc::Status& s) {
  // gRPC core's words for a peer's RST_STREAM (codes other than CANCEL and
  // REFUSED_STREAM map to INTERNAL); a server ends a call with trailers,
  // never with a reset, so this is the proxy speaking for a dead upstream.
  return s.error_code() == grpc::StatusCode::INTERNAL &&
         absl::StartsWith(s.error_message(), "Received RST_STREAM with error code");
}

absl::Status FromGrpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  if (IsProxyReset(s)) {
    return absl::UnavailableError(absl::StrCat(
        "the proxy reset the call (its upstream replica went away): ", s.error_message()));
  }
  // gRPC's own size check ("Received/Sent message larger than max (N vs.
  // M)"), on either side, says nothing of what to do.  The server refuses
  // a reply beyond its --max_message_bytes itself, naming its size; what
  // reaches here is this client's limit, or a request beyond the server's.
  if (s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
      absl::StrContains(s.error_message(), "message larger than max")) {
    return absl::ResourceExhaustedError(absl::StrCat(
        s.error_message(),
        ": a message beyond gRPC's limit, this client's max_message_bytes "
        "(ClientOptions::max_message_bytes) or the server's --max_message_bytes: raise the "
        "smaller above the first size (ExportSessionStream and ImportSessionStream move a "
        "session of any size)"));
  }
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

bool IsMoved(const absl::Status& s) {
  // The message the proto documents for SetFence's refusals
  // (server/session_fences.cc).
  return s.code() == absl::StatusCode::kUnavailable &&
         absl::StrContains(s.message(), "' is moving to replica '");
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(options_.max_message_bytes);
  args.SetMaxSendMessageSize(options_.max_message_bytes);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options_.tls || !options_.root_certs.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options_.root_certs;
    ssl.pem_cert_chain = options_.cert_chain;
    ssl.pem_private_key = options_.private_key;
    creds = grpc::SslCredentials(ssl);
    if (!options_.tls_target_name.empty()) {
      args.SetSslTargetNameOverride(options_.tls_target_name);
    }
  }
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> interceptors;
  if (options_.session_header) interceptors.push_back(SessionRoutingInterceptorFactory());
  channel_ = grpc::experimental::CreateCustomChannelWithInterceptors(options_.target, creds, args,
                                                                     std::move(interceptors));
  stub_ = v1::F2obo::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> Client::NewContext() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!options_.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options_.token);
  ctx->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(options_.rpc_timeout_seconds * 1000)));
  return ctx;
}

#define F2OBO_UNARY(Method, Request, Response)                    \
  Response out;                                                   \
  auto ctx = NewContext();                                        \
  const grpc::Status s = stub_->Method(ctx.get(), Request, &out); \
  if (!s.ok()) return FromGrpc(s);                                \
  return out

absl::StatusOr<v1::SessionInfo> Client::CreateSession(const v1::CreateSessionRequest& req) {
  F2OBO_UNARY(CreateSession, req, v1::SessionInfo);
}

absl::StatusOr<v1::SessionInfo> Client::GetSession(const std::string& id) {
  v1::GetSessionRequest req;
  req.set_session_id(id);
  F2OBO_UNARY(GetSession, req, v1::SessionInfo);
}

absl::StatusOr<v1::ListSessionsResponse> Client::ListSessions() {
  v1::ListSessionsRequest req;
  F2OBO_UNARY(ListSessions, req, v1::ListSessionsResponse);
}

absl::StatusOr<v1::Decision> Client::GetDecision(const std::string& id) {
  v1::GetDecisionRequest req;
  req.set_session_id(id);
  F2OBO_UNARY(GetDecision, req, v1::Decision);
}

absl::StatusOr<v1::GroupInfo> Client::CreateGroup(const v1::CreateGroupRequest& req) {
  F2OBO_UNARY(CreateGroup, req, v1::GroupInfo);
}

absl::StatusOr<v1::GroupInfo> Client::GetGroup(const std::string& id) {
  v1::GetGroupRequest req;
  req.set_group_id(id);
  F2OBO_UNARY(GetGroup, req, v1::GroupInfo);
}

absl::StatusOr<v1::SessionInfo> Client::CheckpointSession(const std::string& id) {
  v1::CheckpointSessionRequest req;
  req.set_session_id(id);
  F2OBO_UNARY(CheckpointSession, req, v1::SessionInfo);
}

absl::StatusOr<v1::SessionInfo> Client::RollbackSession(const std::string& id, int64_t to_t) {
  v1::RollbackSessionRequest req;
  req.set_session_id(id);
  req.set_to_t(to_t);
  F2OBO_UNARY(RollbackSession, req, v1::SessionInfo);
}

absl::StatusOr<v1::SessionInfo> Client::ForkSession(const v1::ForkSessionRequest& req) {
  F2OBO_UNARY(ForkSession, req, v1::SessionInfo);
}

#undef F2OBO_UNARY

absl::Status Client::DeleteSession(const std::string& id) {
  v1::DeleteSessionRequest req;
  req.set_session_id(id);
  v1::DeleteSessionResponse out;
  auto ctx = NewContext();
  return FromGrpc(stub_->DeleteSession(ctx.get(), req, &out));
}

absl::StatusOr<v1::DeleteGroupResponse> Client::DeleteGroup(const std::string& id) {
  v1::DeleteGroupRequest req;
  req.set_group_id(id);
  v1::DeleteGroupResponse out;
  auto ctx = NewContext();
  if (absl::Status s = FromGrpc(stub_->DeleteGroup(ctx.get(), req, &out)); !s.ok()) return s;
  return out;
}

namespace {

// Calls `rpc(ctx, &out)` up to `max_attempts` times, retrying UNAVAILABLE
// and DEADLINE_EXCEEDED with exponential backoff; the "moved" status is
// retried for up to `moved_seconds` more without counting as an attempt.
template <typename Reply, typename Rpc>
absl::StatusOr<Reply> WithRetries(const Client& c, int max_attempts, double backoff,
                                  double max_backoff, double moved_seconds, Rpc rpc) {
  const auto moved_deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(moved_seconds);
  grpc::Status last;
  int failures = 0;
  for (bool first = true;; first = false) {
    if (!first) {
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff));  // backoff
      backoff = std::min(2 * backoff, max_backoff);
    }
    Reply out;
    auto ctx = c.NewContext();
    ctx->set_wait_for_ready(!first);  // after a failure, wait out reconnects
    last = rpc(ctx.get(), &out);
    if (last.ok()) return out;
    if (last.error_code() != grpc::StatusCode::UNAVAILABLE &&
        last.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED && !IsProxyReset(last)) {
      break;
    }
    const bool moved_budget_left =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(backoff) < moved_deadline;
    if (IsMoved(FromGrpc(last)) && moved_budget_left) continue;
    if (++failures >= max_attempts) break;
  }
  return FromGrpc(last);
}

}  // namespace

absl::StatusOr<v1::StepReply> Client::Step(const v1::StepRequest& req) {
  return WithRetries<v1::StepReply>(
      *this, options_.max_attempts, options_.initial_backoff_seconds, options_.max_backoff_seconds,
      options_.moved_retry_seconds,
      [&](grpc::ClientContext* ctx, v1::StepReply* out) { return stub_->Step(ctx, req, out); });
}

absl::StatusOr<v1::GroupStepReply> Client::StepGroup(const v1::GroupStepRequest& req) {
  return WithRetries<v1::GroupStepReply>(
      *this, options_.max_attempts, options_.initial_backoff_seconds, options_.max_backoff_seconds,
      options_.moved_retry_seconds, [&](grpc::ClientContext* ctx, v1::GroupStepReply* out) {
        return stub_->StepGroup(ctx, req, out);
      });
}

absl::StatusOr<bool> Client::Healthy(const std::string& service) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse out;
  auto ctx = NewContext();
  const grpc::Status s = health->Check(ctx.get(), req, &out);
  if (!s.ok()) return FromGrpc(s);
  return out.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace f2obo::client
