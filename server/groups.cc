#include "server/groups.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace f2obo::server {
namespace {

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  }
  return true;
}

}  // namespace

void GroupManager::Restore(const std::vector<StoredGroup>& groups) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const StoredGroup& g : groups) groups_[g.id] = g.members;
}

absl::StatusOr<std::vector<std::string>> GroupManager::Members(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = groups_.find(id);
  if (it == groups_.end()) return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
  return it->second;
}

absl::StatusOr<v1::GroupInfo> GroupManager::Create(const v1::CreateGroupRequest& req) {
  if (!ValidName(req.group_id())) {
    return absl::InvalidArgumentError("group_id: must match [A-Za-z0-9_-]{1,32}");
  }
  if (req.members_size() < 1 || req.members_size() > kMaxMembers) {
    return absl::InvalidArgumentError(
        absl::StrCat("members: a group has 1 to ", kMaxMembers, " members"));
  }
  std::set<std::string> names;
  for (int i = 0; i < req.members_size(); ++i) {
    if (!ValidName(req.members(i).name()) || !names.insert(req.members(i).name()).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "members[", i, "].name: must be unique and match [A-Za-z0-9_-]{1,32}"));
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (groups_.count(req.group_id()) > 0) {
      return absl::AlreadyExistsError(absl::StrCat("group '", req.group_id(), "' already exists"));
    }
  }
  v1::GroupInfo info;
  info.set_group_id(req.group_id());
  std::vector<std::string> ids;
  for (int i = 0; i < req.members_size(); ++i) {
    const v1::GroupMember& m = req.members(i);
    v1::CreateSessionRequest create;
    create.set_session_id(absl::StrCat(req.group_id(), ".", m.name()));
    *create.mutable_spec() = req.spec();
    create.mutable_spec()->set_algorithm(m.algorithm());
    create.mutable_spec()->mutable_options()->MergeFrom(m.options());
    absl::StatusOr<v1::SessionInfo> member = sessions_->Create(create);
    if (!member.ok()) {
      for (const std::string& id : ids) sessions_->Delete(id).IgnoreError();  // all or none
      return absl::Status(member.status().code(),
                          absl::StrCat("members[", i, "] (", m.name(), "): ",
                                       member.status().message()));
    }
    ids.push_back(member->session_id());
    *info.add_members() = *std::move(member);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (groups_.count(req.group_id()) > 0) {  // lost a race with an identical request
    for (const std::string& id : ids) sessions_->Delete(id).IgnoreError();
    return absl::AlreadyExistsError(absl::StrCat("group '", req.group_id(), "' already exists"));
  }
  if (store_ != nullptr) {
    if (absl::Status s = store_->PutGroup(req.group_id(), ids); !s.ok()) {
      for (const std::string& id : ids) sessions_->Delete(id).IgnoreError();
      return s;
    }
  }
  groups_[req.group_id()] = ids;
  return info;
}

absl::StatusOr<v1::GroupInfo> GroupManager::Get(const std::string& id) const {
  absl::StatusOr<std::vector<std::string>> members = Members(id);
  if (!members.ok()) return members.status();
  v1::GroupInfo info;
  info.set_group_id(id);
  for (const std::string& m : *members) {
    absl::StatusOr<v1::SessionInfo> s = sessions_->Get(m);
    if (s.ok()) *info.add_members() = *std::move(s);
  }
  return info;
}

absl::StatusOr<v1::GroupStepReply> GroupManager::Step(const v1::GroupStepRequest& req) {
  absl::StatusOr<std::vector<std::string>> members = Members(req.group_id());
  if (!members.ok()) return members.status();
  absl::StatusOr<std::shared_ptr<const StepData>> data =
      sessions_->Decode(req.upper(), req.inner());  // one decode for every member
  if (!data.ok()) return data.status();
  v1::GroupStepReply reply;
  reply.set_group_id(req.group_id());
  reply.set_t(req.t());
  // Members share the family, so a batch one member's family rejects is
  // rejected by all: fail the request before anything changed.
  if (!members->empty()) {
    if (absl::Status s = sessions_->ValidateBatches(members->front(), **data);
        !s.ok() && s.code() != absl::StatusCode::kNotFound) {
      return s;
    }
  }
  for (size_t i = 0; i < members->size(); ++i) {
    absl::StatusOr<v1::StepReply> r = sessions_->ApplyDecoded((*members)[i], req.t(), *data);
    v1::MemberStepResult* m = reply.add_members();
    m->set_session_id((*members)[i]);
    if (r.ok()) {
      *m->mutable_reply() = *std::move(r);
    } else {
      m->set_code(static_cast<int32_t>(r.status().code()));
      m->set_message(std::string(r.status().message()));
    }
  }
  return reply;
}

}  // namespace f2obo::server
