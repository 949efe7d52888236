#include "server/groups.h"

#include <cstring>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/convert.h"
#include "server/fault_points.h"
#include "server/ids.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

std::vector<std::string> GroupManager::Restore(const std::vector<StoredGroup>& groups) {
  std::vector<std::string> problems;
  absl::MutexLock lock(&mu_);
  for (const StoredGroup& g : groups) {
    Group& group = groups_[g.id];
    group.members = g.members;
    for (const std::string& m : g.members) {
      if (sessions_->Get(m).ok()) continue;
      // Serving the others as the group would silently compare fewer
      // algorithms than were asked for.
      group.unavailable = absl::StrCat("group '", g.id, "' is not served: its member session '", m,
                                       "' could not be loaded at start-up; DeleteGroup "
                                       "removes the group and its remaining members");
      problems.push_back(group.unavailable);
      break;
    }
  }
  return problems;
}

std::string GroupManager::OwnerOf(const std::string& session_id) const {
  for (const auto& [id, g] : groups_) {
    for (const std::string& m : g.members) {
      if (m == session_id) return id;
    }
  }
  for (const auto& [id, members] : busy_) {
    for (const std::string& m : members) {
      if (m == session_id) return id;
    }
  }
  return "";
}

absl::StatusOr<std::vector<std::string>> GroupManager::Members(const std::string& id) const {
  {
    absl::MutexLock lock(&mu_);
    const auto it = groups_.find(id);
    if (it != groups_.end()) {
      if (!it->second.unavailable.empty()) {
        return absl::FailedPreconditionError(it->second.unavailable);
      }
      return it->second.members;
    }
    if (!shared() || busy_.count(id) > 0) {
      return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
    }
  }
  // A shared store's group that another server created after this one
  // started: learnt from the store (its members load on demand as any
  // session does).
  absl::StatusOr<StoredGroup> stored = group_reader_->LoadGroup(id);
  if (!stored.ok()) {
    if (absl::IsNotFound(stored.status())) {
      return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
    }
    return stored.status();
  }
  absl::MutexLock lock(&mu_);
  if (busy_.count(id) > 0) return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
  // (Created or learnt meanwhile by another call: that one stands.)
  const auto it = groups_.emplace(id, Group{std::move(stored->members), ""}).first;
  if (!it->second.unavailable.empty()) return absl::FailedPreconditionError(it->second.unavailable);
  return it->second.members;
}

absl::StatusOr<std::string> GroupManager::StoredOwnerOf(const std::string& session_id) const {
  if (!shared()) return std::string();
  absl::StatusOr<std::string> owner = group_reader_->GroupOf(session_id);
  if (!owner.ok()) {
    return StoreWriteFailed(owner.status(),
                            absl::StrCat("session '", session_id, "': its group not read"));
  }
  return owner;
}

absl::StatusOr<v1::GroupInfo> GroupManager::Create(const v1::CreateGroupRequest& req,
                                                   Deadline deadline) {
  if (!IsGroupName(req.group_id())) {
    return absl::InvalidArgumentError(absl::StrCat("group_id: must match ", kGroupNamePattern));
  }
  if (req.members_size() < 1 || req.members_size() > kMaxMembers) {
    return absl::InvalidArgumentError(
        absl::StrCat("members: a group has 1 to ", kMaxMembers, " members"));
  }
  std::set<std::string> names;
  std::vector<std::string> ids;
  for (int i = 0; i < req.members_size(); ++i) {
    if (!IsGroupName(req.members(i).name()) || !names.insert(req.members(i).name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("members[", i, "].name: must be unique and match ", kGroupNamePattern));
    }
    ids.push_back(absl::StrCat(req.group_id(), ".", req.members(i).name()));
    if (!IsSessionId(ids.back())) {  // both parts valid, together too long
      return absl::InvalidArgumentError(
          absl::StrCat("members[", i, "].name: the member's session id '", ids.back(), "' has ",
                       ids.back().size(), " characters, over the 64 of ", kSessionIdPattern,
                       ": shorten the group id or the name"));
    }
  }
  // Shared options reach the members that read them (convert.h).
  absl::StatusOr<std::vector<v1::SessionSpec>> specs = GroupMemberSpecs(req.spec(), req.members());
  if (!specs.ok()) return specs.status();
  std::vector<v1::CreateSessionRequest> creates(ids.size());
  for (int i = 0; i < req.members_size(); ++i) {
    creates[i].set_session_id(ids[i]);
    *creates[i].mutable_spec() = std::move((*specs)[i]);
  }
  const auto name = [&](size_t i) {
    return absl::StrCat("members[", i, "] (", req.members(static_cast<int>(i)).name(), ")");
  };
  // Members and group record in one store transaction, as Import: a crash
  // cannot leave members without their group (lone sessions that accept
  // steps and make a retried CreateGroup fail ALREADY_EXISTS).
  return Install(
      "create_group", req.group_id(), ids,
      [&](const SessionManager::PersistAll& persist) {
        return sessions_->CreateAll(creates, name, persist);
      },
      deadline);
}

absl::StatusOr<v1::GroupInfo> GroupManager::Import(const v1::ImportGroupRequest& req,
                                                   Deadline deadline) {
  if (!IsGroupName(req.group_id())) {
    return absl::InvalidArgumentError(absl::StrCat("group_id: must match ", kGroupNamePattern));
  }
  if (req.members_size() < 1 || req.members_size() > kMaxMembers) {
    return absl::InvalidArgumentError(
        absl::StrCat("members: a group has 1 to ", kMaxMembers, " members"));
  }
  std::set<std::string> ids_seen;
  std::vector<std::string> ids;
  for (int i = 0; i < req.members_size(); ++i) {
    const std::string& id = req.members(i).session_id();
    const std::string prefix = req.group_id() + ".";
    if (id.rfind(prefix, 0) != 0 || !IsGroupName(id.substr(prefix.size())) || !IsSessionId(id) ||
        !ids_seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat("members[", i,
                                                     "].session_id: must be unique and match '",
                                                     prefix, "<", kGroupNamePattern, ">'"));
    }
    ids.push_back(id);
  }
  std::vector<v1::ImportSessionRequest> imports(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) *imports[i].mutable_session() = req.members(i);
  // Members and group record in one store transaction: a crash cannot
  // leave members without their group (lone sessions that would accept
  // steps on the new owner, then be replaced when the move is rerun).
  return Install(
      "import_group", req.group_id(), ids,
      [&](const SessionManager::PersistAll& persist) {
        return sessions_->ImportAll(imports, "members", persist);
      },
      deadline);
}

absl::Status GroupManager::Claim(const std::string& group_id, const std::vector<std::string>& ids) {
  absl::MutexLock lock(&mu_);
  if (groups_.count(group_id) > 0 || busy_.count(group_id) > 0) {
    return absl::AlreadyExistsError(absl::StrCat("group '", group_id, "' already exists"));
  }
  for (const std::string& id : ids) {
    if (deleting_sessions_.count(id) > 0) {
      return absl::AbortedError(
          absl::StrCat("session '", id, "' is being deleted; retry CreateGroup"));
    }
  }
  // Checked up front so that a group too large is refused without
  // creating (and persisting) some members first.  A race with other
  // creations is still caught by each member's own check.
  const int max = sessions_->limits().max_sessions;
  const size_t held = sessions_->size();
  if (held + ids.size() > static_cast<size_t>(max)) {
    return absl::ResourceExhaustedError(absl::StrCat("members: a group of ", ids.size(),
                                                     " sessions would exceed max_sessions = ", max,
                                                     " (the server holds ", held, ")"));
  }
  busy_[group_id] = ids;
  return absl::OkStatus();
}

absl::StatusOr<v1::GroupInfo> GroupManager::Install(const char* rpc, const std::string& group_id,
                                                    const std::vector<std::string>& ids,
                                                    const InstallMembers& install,
                                                    Deadline deadline) {
  if (absl::Status s = Claim(group_id, ids); !s.ok()) return s;
  absl::StatusOr<std::vector<v1::SessionInfo>> members =
      install([&](const std::vector<SessionRecord>& records) -> absl::Status {
        if (absl::Status s = FaultPoint(absl::StrCat(rpc, "_before_commit"), group_id); !s.ok()) {
          return s;
        }
        if (store_ == nullptr) return absl::OkStatus();
        const std::string not_done =
            absl::StrCat("group '", group_id, "' not ",
                         rpc == std::string("create_group") ? "created" : "imported");
        // A write begun after the call's deadline would be answered
        // DEADLINE_EXCEEDED (by the client's side) and happen all the same.
        if (std::chrono::system_clock::now() >= deadline) {
          return absl::DeadlineExceededError(absl::StrCat(
              "the deadline passed before it was written (building its members took that "
              "long); ",
              not_done));
        }
        absl::Status s = store_->PutGroupWithSessions(group_id, records, deadline);
        if (s.ok()) return s;
        if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
          return absl::DeadlineExceededError(absl::StrCat(s.message(), "; ", not_done));
        }
        return StoreWriteFailed(s, not_done);
      });
  // Durable already: a fault here is a crash test's (the group survives it).
  if (members.ok()) FaultPoint(absl::StrCat(rpc, "_after_commit"), group_id).IgnoreError();
  absl::MutexLock lock(&mu_);
  busy_.erase(group_id);
  if (!members.ok()) return members.status();
  groups_[group_id] = Group{ids, ""};
  v1::GroupInfo info;
  info.set_group_id(group_id);
  for (v1::SessionInfo& m : *members) *info.add_members() = std::move(m);
  return info;
}

absl::StatusOr<std::vector<std::string>> GroupManager::Delete(const std::string& id,
                                                              Deadline deadline) {
  // A shared store's group not known here yet is learnt first.
  if (absl::StatusOr<std::vector<std::string>> known = Members(id);
      !known.ok() && !absl::IsFailedPrecondition(known.status())) {
    return known.status();
  }
  Group group;
  {
    absl::MutexLock lock(&mu_);
    const auto it = groups_.find(id);
    if (it == groups_.end()) return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
    group = it->second;
    // Claimed while its members go, so that neither a new group of the same
    // id nor a step to it can interleave.
    busy_[id] = group.members;
    groups_.erase(it);
  }
  if (store_ != nullptr) {
    if (absl::Status s = store_->DeleteGroup(id, group.members, deadline); !s.ok()) {
      absl::MutexLock lock(&mu_);
      busy_.erase(id);
      groups_[id] = std::move(group);
      if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
        return absl::DeadlineExceededError(
            absl::StrCat("group '", id, "': ", s.message(), "; not deleted"));
      }
      return StoreWriteFailed(s, absl::StrCat("group '", id, "' not deleted"));
    }
  }
  std::vector<std::string> deleted;
  for (const std::string& m : group.members) {
    // Only NOT_FOUND is possible here (a member missing since start-up).
    if (sessions_->Delete(m, /*from_store=*/false).ok()) deleted.push_back(m);
  }
  absl::MutexLock lock(&mu_);
  busy_.erase(id);
  return deleted;
}

absl::StatusOr<std::vector<std::string>> GroupManager::DeleteKey(const std::string& key,
                                                                 Deadline deadline) {
  std::optional<Group> group;
  std::vector<std::string> ids;  // the group's members, then the lone sessions
  {
    absl::MutexLock lock(&mu_);
    if (busy_.count(key) > 0) {
      return absl::AbortedError(
          absl::StrCat("group '", key, "' is being created or deleted; retry DropFencedSessions"));
    }
    if (const auto it = groups_.find(key); it != groups_.end()) {
      group = it->second;
      ids = group->members;
      // Claimed as Delete claims it (no group of that id, no group step).
      busy_[key] = group->members;
      groups_.erase(it);
    }
    for (const std::string& id : sessions_->SessionsOfKey(key)) {
      if (OwnerOf(id).empty()) {
        ids.push_back(id);
        deleting_sessions_.insert(id);
      }
    }
  }
  const size_t members = group.has_value() ? group->members.size() : 0;
  const auto release = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (size_t i = members; i < ids.size(); ++i) {
      deleting_sessions_.erase(deleting_sessions_.find(ids[i]));
    }
    if (!group.has_value()) return;
    busy_.erase(key);
  };
  // One transaction for the group's record and every session's rows (the
  // store's DeleteGroup; with no group of that id it removes none).
  if (store_ != nullptr && !ids.empty()) {
    if (absl::Status s = store_->DeleteGroup(key, ids, deadline); !s.ok()) {
      absl::MutexLock lock(&mu_);
      release();
      if (group.has_value()) groups_[key] = *std::move(group);
      if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
        return absl::DeadlineExceededError(
            absl::StrCat("routing key '", key, "': ", s.message(), "; nothing dropped"));
      }
      return StoreWriteFailed(s, absl::StrCat("routing key '", key, "': nothing dropped"));
    }
  }
  // Durable: a fault here is a crash test's (every session is gone).
  FaultPoint("drop_key_after_commit", key).IgnoreError();
  std::vector<std::string> deleted;
  for (const std::string& id : ids) {
    // Only NOT_FOUND is possible here (a member missing since start-up, or
    // a session another delete took meanwhile).
    if (sessions_->Delete(id, /*from_store=*/false).ok()) deleted.push_back(id);
  }
  absl::MutexLock lock(&mu_);
  release();
  return deleted;
}

absl::Status GroupManager::DeleteSession(const std::string& session_id, Deadline deadline) {
  {
    // (A group another server created holds only sessions new then: read
    // before the lock, it cannot come to hold this one meanwhile.)
    absl::StatusOr<std::string> stored_owner = StoredOwnerOf(session_id);
    if (!stored_owner.ok()) return stored_owner.status();
    absl::MutexLock lock(&mu_);
    std::string owner = OwnerOf(session_id);
    if (owner.empty()) owner = *stored_owner;
    if (!owner.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("session '", session_id, "' is a member of group '", owner,
                       "': delete the group instead (DeleteGroup)"));
    }
    deleting_sessions_.insert(session_id);
  }
  absl::Status s = sessions_->Delete(session_id, /*from_store=*/true, deadline);
  absl::MutexLock lock(&mu_);
  deleting_sessions_.erase(deleting_sessions_.find(session_id));
  return s;
}

absl::StatusOr<v1::SessionInfo> GroupManager::RollbackSession(const std::string& session_id,
                                                              int64_t to_t, bool* rolled_back) {
  {
    // Checked under mu_ only: a group created after this check cannot take
    // the session as a member (member ids are new sessions).
    absl::StatusOr<std::string> stored_owner = StoredOwnerOf(session_id);
    if (!stored_owner.ok()) return stored_owner.status();
    absl::MutexLock lock(&mu_);
    std::string owner = OwnerOf(session_id);
    if (owner.empty()) owner = *stored_owner;
    if (!owner.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("session '", session_id, "' is a member of group '", owner,
                       "': a member is not rolled back alone (fork it instead: ForkSession)"));
    }
  }
  return sessions_->Rollback(session_id, to_t, rolled_back);
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

absl::StatusOr<v1::GroupStepReply> GroupManager::Step(const v1::GroupStepRequest& req,
                                                      const grpc::ServerContext* call) {
  absl::StatusOr<std::vector<std::string>> members = Members(req.group_id());
  if (!members.ok()) return members.status();
  absl::StatusOr<std::shared_ptr<const StepData>> data =
      sessions_->Decode(req.upper(), req.inner(), req.tasks());  // one decode for every member
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
  // All members or none (SessionManager::ApplyAll): a member's round or
  // the store failing fails the whole step and changes no member.
  absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> results =
      sessions_->ApplyAll(req.group_id(), *members, req.t(), *data, call);
  if (!results.ok()) return results.status();
  for (size_t i = 0; i < members->size(); ++i) {
    absl::StatusOr<v1::StepReply>& r = (*results)[i];
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
