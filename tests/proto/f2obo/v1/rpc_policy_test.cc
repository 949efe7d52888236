// Every RPC of f2obo.v1.F2obo declares, at the RPC, the role a token needs
// and the request field a routing proxy pins it by (rpc_policy.proto); the
// server's authorization and the clients' routing header read only that.
// These tests walk the service's descriptor, so an RPC added without its
// declaration fails here, whatever else it forgot.
#include "f2obo/v1/rpc_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "f2obo/v1/f2obo.pb.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace f2obo::v1 {
namespace {

using google::protobuf::Message;
using google::protobuf::MethodDescriptor;

std::vector<const MethodDescriptor*> EveryRpc() {
  const auto* service = F2oboService();
  std::vector<const MethodDescriptor*> out;
  if (service == nullptr) return out;
  for (int i = 0; i < service->method_count(); ++i) out.push_back(service->method(i));
  return out;
}

// A fresh request of `m`'s input type.
std::unique_ptr<Message> NewRequest(const MethodDescriptor* m) {
  const Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(m->input_type());
  return std::unique_ptr<Message>(prototype->New());
}

// Sets the string field at `dotted` (through message fields) to `value`.
void SetPath(Message* request, const std::string& dotted, const std::string& value) {
  Message* at = request;
  const std::vector<std::string> names = absl::StrSplit(dotted, '.');
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    const auto* field = at->GetDescriptor()->FindFieldByName(names[i]);
    ASSERT_NE(field, nullptr) << dotted;
    at = at->GetReflection()->MutableMessage(at, field);
  }
  const auto* field = at->GetDescriptor()->FindFieldByName(names.back());
  ASSERT_NE(field, nullptr) << dotted;
  at->GetReflection()->SetString(at, field, value);
}

TEST(RpcPolicy, EveryRpcDeclaresARoleAndItsRouting) {
  const std::vector<const MethodDescriptor*> rpcs = EveryRpc();
  ASSERT_FALSE(rpcs.empty()) << "service f2obo.v1.F2obo not found in the generated code";
  EXPECT_TRUE(CheckRpcPolicies().ok()) << CheckRpcPolicies();
  for (const MethodDescriptor* m : rpcs) {
    const RpcPolicy* policy = FindRpcPolicy(m->name());
    ASSERT_NE(policy, nullptr) << m->name() << " has no (f2obo.v1.policy) option";
    EXPECT_NE(policy->role(), RpcPolicy::ROLE_UNSPECIFIED) << m->name();
    EXPECT_NE(policy->routing_fields_size() > 0, policy->unrouted()) << m->name();
    EXPECT_EQ(FindRpcPolicy("/f2obo.v1.F2obo/" + m->name()), policy) << m->name();
  }
  EXPECT_EQ(FindRpcPolicy("NoSuchRpc"), nullptr);
  EXPECT_EQ(FindRpcPolicy("/grpc.health.v1.Health/Check"), nullptr);
}

// Each routing field of each RPC, set alone in a fresh request, is the id
// the request names; a request with none set names none.
TEST(RpcPolicy, EveryRoutingFieldOfEveryRpcGivesTheId) {
  int routed = 0;
  for (const MethodDescriptor* m : EveryRpc()) {
    const RpcPolicy* policy = FindRpcPolicy(m->name());
    ASSERT_NE(policy, nullptr) << m->name();
    EXPECT_EQ(RoutedId(m->name(), *NewRequest(m)), "") << m->name();
    for (const std::string& path : policy->routing_fields()) {
      std::unique_ptr<Message> request = NewRequest(m);
      SetPath(request.get(), path, "key.member");
      EXPECT_EQ(RoutedId(m->name(), *request), "key.member") << m->name() << " " << path;
      EXPECT_EQ(RoutedId("/f2obo.v1.F2obo/" + m->name(), *request), "key.member") << m->name();
      ++routed;
    }
  }
  EXPECT_GT(routed, 0);
}

// The first routing field set wins: an import renamed by session_id routes
// by the new id, one without routes by the exported id.
TEST(RpcPolicy, TheFirstRoutingFieldSetWins) {
  ImportSessionRequest import;
  import.mutable_session()->set_session_id("exported");
  EXPECT_EQ(RoutedId("ImportSession", import), "exported");
  import.set_session_id("renamed");
  EXPECT_EQ(RoutedId("ImportSession", import), "renamed");
}

TEST(RpcPolicy, OracleStepsRoutesByTheSessionItOpens) {
  OracleClientMessage message;
  EXPECT_EQ(RoutedId("OracleSteps", message), "");
  message.mutable_open()->set_session_id("orc.m");
  EXPECT_EQ(RoutedId("OracleSteps", message), "orc.m");
}

TEST(RpcPolicy, ARequestOfAnotherTypeNamesNothing) {
  StepRequest step;
  step.set_session_id("s");
  EXPECT_EQ(RoutedId("Step", step), "s");
  EXPECT_EQ(RoutedId("GetGroup", step), "");
  EXPECT_EQ(RoutedId("NoSuchRpc", step), "");
}

}  // namespace
}  // namespace f2obo::v1
