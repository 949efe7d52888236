// Each RPC's (f2obo.v1.policy) option (rpc_policy.proto), read from the
// generated descriptor of f2obo.v1.F2obo: the one declaration of which token
// role an RPC needs (server/auth.h) and which request field a proxy routes
// it by (client/session_routing.h).
#ifndef F2OBO_PROTO_F2OBO_V1_RPC_POLICY_H_
#define F2OBO_PROTO_F2OBO_V1_RPC_POLICY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "f2obo/v1/rpc_policy.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace f2obo::v1 {

// The service's descriptor, f2obo.v1.F2obo (f2obo.proto declares it and no
// message: its messages are in the files it imports).
const google::protobuf::ServiceDescriptor* F2oboService();

// The policy of the service's method `method`, named as "Step" or as gRPC
// does ("/f2obo.v1.F2obo/Step"); null when the service has no such method.
const RpcPolicy* FindRpcPolicy(absl::string_view method);

// The session or group id `request` of `method` names: its first routing
// field that is set; "" for a method without routing fields, an unknown
// method, or a request of another type.
std::string RoutedId(absl::string_view method, const google::protobuf::Message& request);

// OK when every method of the service declares a role and either routing
// fields, each the path of a string field of its request, or unrouted (not
// both); otherwise INVALID_ARGUMENT naming the first method that does not.
absl::Status CheckRpcPolicies();

}  // namespace f2obo::v1

#endif  // F2OBO_PROTO_F2OBO_V1_RPC_POLICY_H_
