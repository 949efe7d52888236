#include "f2obo/v1/rpc_policy.h"

#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "f2obo/v1/f2obo.pb.h"
#include "google/protobuf/descriptor.h"

namespace f2obo::v1 {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::MethodDescriptor;
using google::protobuf::ServiceDescriptor;

// A routing field's path from the request: message fields, then a string.
using FieldPath = std::vector<const FieldDescriptor*>;

struct Method {
  const MethodDescriptor* descriptor = nullptr;
  RpcPolicy policy;
  std::vector<FieldPath> routes;  // resolved routing_fields
};

// The path `dotted` names in `type`: every step but the last a singular
// message field, the last a singular string field.
absl::StatusOr<FieldPath> Resolve(const Descriptor* type, absl::string_view dotted) {
  FieldPath path;
  const std::vector<absl::string_view> names = absl::StrSplit(dotted, '.');
  for (size_t i = 0; i < names.size(); ++i) {
    const FieldDescriptor* f =
        type == nullptr ? nullptr : type->FindFieldByName(std::string(names[i]));
    const bool last = i + 1 == names.size();
    const auto want = last ? FieldDescriptor::CPPTYPE_STRING : FieldDescriptor::CPPTYPE_MESSAGE;
    if (f == nullptr || f->is_repeated() || f->cpp_type() != want) {
      return absl::InvalidArgumentError(
          absl::StrCat("routing field '", dotted, "': ", type == nullptr ? "?" : type->full_name(),
                       " has no ", last ? "string" : "message", " field '", names[i], "'"));
    }
    path.push_back(f);
    type = f->message_type();
  }
  return path;
}

absl::StatusOr<Method> Read(const MethodDescriptor* m) {
  Method out;
  out.descriptor = m;
  out.policy = m->options().GetExtension(policy);
  const auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rpc ", m->name(), ": ", why, " (its option (f2obo.v1.policy), rpc_policy.proto)"));
  };
  if (out.policy.role() == RpcPolicy::ROLE_UNSPECIFIED) return fail("no role");
  if (out.policy.unrouted() == (out.policy.routing_fields_size() > 0)) {
    return fail("give either routing_fields or unrouted: true");
  }
  for (const std::string& dotted : out.policy.routing_fields()) {
    absl::StatusOr<FieldPath> path = Resolve(m->input_type(), dotted);
    if (!path.ok()) return fail(path.status().message());
    out.routes.push_back(*std::move(path));
  }
  return out;
}

struct Table {
  absl::flat_hash_map<std::string, Method> methods;  // by name
  absl::Status status;                               // the first method not declared right
};

const Table& Methods() {
  static const Table* table = [] {
    auto* t = new Table;
    const ServiceDescriptor* service = F2oboService();
    if (service == nullptr) {
      t->status = absl::InternalError("service f2obo.v1.F2obo is not in the generated code");
      return t;
    }
    for (int i = 0; i < service->method_count(); ++i) {
      absl::StatusOr<Method> m = Read(service->method(i));
      if (!m.ok()) {
        if (t->status.ok()) t->status = m.status();
        continue;  // undeclared: not found, so refused and routed nowhere
      }
      t->methods.emplace(service->method(i)->name(), *std::move(m));
    }
    return t;
  }();
  return *table;
}

const Method* Find(absl::string_view method) {
  absl::ConsumePrefix(&method, "/f2obo.v1.F2obo/");
  const auto& methods = Methods().methods;
  const auto it = methods.find(method);
  return it == methods.end() ? nullptr : &it->second;
}

}  // namespace

// By name from the generated pool: no message of f2obo.proto leads to it.
// The pool has it once f2obo.pb.o is linked, which proto/CMakeLists.txt
// makes sure of.
const ServiceDescriptor* F2oboService() {
  return google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("f2obo.v1.F2obo");
}

const RpcPolicy* FindRpcPolicy(absl::string_view method) {
  const Method* m = Find(method);
  return m == nullptr ? nullptr : &m->policy;
}

std::string RoutedId(absl::string_view method, const Message& request) {
  const Method* m = Find(method);
  if (m == nullptr || request.GetDescriptor() != m->descriptor->input_type()) return "";
  for (const FieldPath& path : m->routes) {
    const Message* at = &request;
    for (size_t i = 0; at != nullptr && i + 1 < path.size(); ++i) {
      const auto* reflection = at->GetReflection();
      at = reflection->HasField(*at, path[i]) ? &reflection->GetMessage(*at, path[i]) : nullptr;
    }
    if (at == nullptr) continue;
    std::string id = at->GetReflection()->GetString(*at, path.back());
    if (!id.empty()) return id;
  }
  return "";
}

absl::Status CheckRpcPolicies() { return Methods().status; }

}  // namespace f2obo::v1
