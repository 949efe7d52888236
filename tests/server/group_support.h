// What the group e2e tests share: a four-member group of the same spec
// and its steps, and small readers of the server's answers.
#ifndef F2OBO_TESTS_SERVER_GROUP_SUPPORT_H_
#define F2OBO_TESTS_SERVER_GROUP_SUPPORT_H_

#include <string>
#include <vector>

#include "client/client.h"
#include "core/types.h"
#include "tests/server/e2e_support.h"

namespace f2obo::testing {

inline const char* const kAlgorithms[] = {"f2obo", "af2obo", "sf2obo", "obbo"};

inline v1::CreateGroupRequest FourMemberGroup(const FamilyCase& f) {
  v1::CreateGroupRequest req;
  req.set_group_id("cmp");
  *req.mutable_spec() = SpecFor(f, "f2obo", 11);
  for (const char* a : kAlgorithms) {
    v1::GroupMember* m = req.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  req.mutable_members(0)->mutable_options()->set_inner_steps(3);  // a per-member override
  return req;
}

inline v1::GroupStepRequest GroupRequest(const FamilyCase& f, int64_t t) {
  const v1::StepRequest single = RequestFor(f, "", t);
  v1::GroupStepRequest req;
  req.set_group_id("cmp");
  req.set_t(t);
  *req.mutable_upper() = single.upper();
  *req.mutable_inner() = single.inner();
  return req;
}

inline grpc::Status CreateGroup(client::Client& c, const v1::CreateGroupRequest& req,
                                v1::GroupInfo* info = nullptr) {
  v1::GroupInfo ignored;
  auto ctx = c.NewContext();
  return c.stub().CreateGroup(ctx.get(), req, info != nullptr ? info : &ignored);
}

inline grpc::Status GetGroup(client::Client& c, const std::string& id,
                             v1::GroupInfo* info = nullptr) {
  v1::GetGroupRequest req;
  req.set_group_id(id);
  v1::GroupInfo ignored;
  auto ctx = c.NewContext();
  return c.stub().GetGroup(ctx.get(), req, info != nullptr ? info : &ignored);
}

inline std::vector<std::string> SessionIds(client::Client& c) {
  std::vector<std::string> ids;
  const absl::StatusOr<v1::ListSessionsResponse> list = c.ListSessions();
  if (!list.ok()) return {"ListSessions failed: " + list.status().ToString()};
  for (const v1::SessionInfo& s : list->sessions()) ids.push_back(s.session_id());
  return ids;
}

inline std::vector<double> Vec(const google::protobuf::RepeatedField<double>& v) {
  return std::vector<double>(v.begin(), v.end());
}

inline std::vector<double> Vec(const Vector& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_GROUP_SUPPORT_H_
