#include "client/session_routing.h"

#include <grpcpp/client_context.h>

#include "f2obo/v1/rpc_policy.h"

namespace f2obo::client {
namespace {

using grpc::experimental::ClientInterceptorFactoryInterface;
using grpc::experimental::ClientRpcInfo;
using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::Interceptor;
using grpc::experimental::InterceptorBatchMethods;

class SessionRoutingInterceptor : public Interceptor {
 public:
  explicit SessionRoutingInterceptor(ClientRpcInfo* info)
      : method_(info->method() == nullptr ? "" : info->method()),
        routed_(v1::FindRpcPolicy(method_) != nullptr) {}

  void Intercept(InterceptorBatchMethods* methods) override {
    // Initial metadata travels with the first message for unary and
    // server-streaming calls, and for corked client/bidi streams.
    if (routed_ &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_INITIAL_METADATA) &&
        methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE) &&
        methods->GetSendMessage() != nullptr) {
      // gRPC passes the caller's own request object.  Every request of the
      // service is a generated message class, whose only base is
      // google::protobuf::Message, so the pointer addresses that base too.
      const auto& request =
          *static_cast<const google::protobuf::Message*>(methods->GetSendMessage());
      const std::string key = SessionRoutingKey(v1::RoutedId(method_, request));
      if (!key.empty()) methods->GetSendInitialMetadata()->emplace(kSessionHeader, key);
    }
    methods->Proceed();
  }

 private:
  const std::string method_;  // "/f2obo.v1.F2obo/Step"
  const bool routed_;         // a method of the service (its policy says how)
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
