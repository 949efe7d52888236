#include "client/session_routing.h"

#include <grpcpp/client_context.h>

#include "absl/strings/strip.h"
#include "f2obo/v1/f2obo.grpc.pb.h"

namespace f2obo::client {
namespace {

using grpc::experimental::ClientInterceptorFactoryInterface;
using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::Interceptor;
using grpc::experimental::InterceptorBatchMethods;

template <typename Request>
const Request& As(const void* message) {
  return *static_cast<const Request*>(message);
}

// The session (or group) id a request names, by method; "" for methods
// without one.  `message` is the request's own (unserialized) object.
std::string IdOf(absl::string_view method, const void* message) {
  constexpr absl::string_view kService = "/f2obo.v1.F2obo/";
  if (message == nullptr || !absl::ConsumePrefix(&method, kService)) return "";
  if (method == "Step" || method == "Steps") return As<v1::StepRequest>(message).session_id();
  if (method == "CreateSession") return As<v1::CreateSessionRequest>(message).session_id();
  if (method == "GetSession") return As<v1::GetSessionRequest>(message).session_id();
  if (method == "DeleteSession") return As<v1::DeleteSessionRequest>(message).session_id();
  if (method == "GetDecision") return As<v1::GetDecisionRequest>(message).session_id();
  if (method == "WatchMetrics") return As<v1::WatchMetricsRequest>(message).session_id();
  if (method == "ExportSession") return As<v1::ExportSessionRequest>(message).session_id();
  if (method == "ImportSession") {
    const auto& r = As<v1::ImportSessionRequest>(message);
    return r.session_id().empty() ? r.session().session_id() : r.session_id();
  }
  if (method == "CheckpointSession") {
    return As<v1::CheckpointSessionRequest>(message).session_id();
  }
  if (method == "RollbackSession") return As<v1::RollbackSessionRequest>(message).session_id();
  // A fork is made where its source is (name it "<source key>.<suffix>" to
  // keep routing with it).
  if (method == "ForkSession") return As<v1::ForkSessionRequest>(message).session_id();
  if (method == "CreateGroup") return As<v1::CreateGroupRequest>(message).group_id();
  if (method == "GetGroup") return As<v1::GetGroupRequest>(message).group_id();
  if (method == "DeleteGroup") return As<v1::DeleteGroupRequest>(message).group_id();
  if (method == "ImportGroup") return As<v1::ImportGroupRequest>(message).group_id();
  // Asks the proxy which replica owns a key (f2obo-cli rebalance).
  if (method == "GetServerInfo") return As<v1::GetServerInfoRequest>(message).routing_key();
  if (method == "StepGroup" || method == "StepsGroup") {
    return As<v1::GroupStepRequest>(message).group_id();
  }
  return "";
}

class SessionRoutingInterceptor : public Interceptor {
 public:
  explicit SessionRoutingInterceptor(ClientRpcInfo* info) : method_(info->method()) {}

  void Intercept(InterceptorBatchMethods* methods) override {
    // Initial metadata travels with the first message for unary and
    // server-streaming calls, and for corked client/bidi streams.
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA) &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
      const std::string key =
          SessionRoutingKey(IdOf(method_ == nullptr ? "" : method_, methods->GetSendMessage()));
      if (!key.empty()) methods->GetSendInitialMetadata()->emplace(kSessionHeader, key);
    }
    methods->Proceed();
  }

 private:
  const char* method_;
};

class Factory : public ClientInterceptorFactoryInterface {
 public:
  Interceptor* CreateClientInterceptor(ClientRpcInfo* info) override {
    return new SessionRoutingInterceptor(info);
  }
};

}  // namespace

std::string SessionRoutingKey(absl::string_view session_id) {
  return std::string(session_id.substr(0, session_id.find('.')));
}

std::unique_ptr<ClientInterceptorFactoryInterface> SessionRoutingInterceptorFactory() {
  return std::make_unique<Factory>();
}

void PrepareStreamContext(grpc::ClientContext* ctx) { ctx->set_initial_metadata_corked(true); }

}  // namespace f2obo::client
