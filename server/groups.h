// Side-by-side groups (issue: "every peer algorithm on the same stream"):
// a group is a list of member sessions on the same family and data, each
// with its own algorithm and options.  One group step decodes the batches
// once and applies them to every member; each member keeps its own
// exactly-once index, so a retried group step re-applies nothing.
//
// With a store shared by several servers, groups are read at start and a
// group another server created later is learnt from the store when first
// asked for (Get, Step, Delete; a member's DeleteSession and
// RollbackSession ask the store for its group).  A group another server
// deleted stays known here; its members are gone from the store, so its
// steps fail NOT_FOUND.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_GROUPS_H_
#define F2OBO_SERVER_GROUPS_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/session_manager.h"
#include "server/store/group_reader.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class GroupManager {
 public:
  static constexpr int kMaxMembers = 16;

  // `store` may be null (in-memory).  Both must outlive this.
  GroupManager(SessionManager* sessions, SessionStore* store)
      : sessions_(sessions),
        store_(store),
        group_reader_(store != nullptr && store->shared() ? dynamic_cast<StoredGroupReader*>(store)
                                                          : nullptr) {}

  // Groups loaded at start (their member sessions were recovered already).
  // A group with a member that was not recovered is kept but not served
  // (Get and Step fail naming the member; Delete removes what remains);
  // returns one message per such group.
  std::vector<std::string> Restore(const std::vector<StoredGroup>& groups);

  // Creates every member session and the group, all or none, and durably
  // so: members and group record are stored in one transaction
  // (SessionManager::CreateAll).  The members count against max_sessions: a
  // group that would exceed it is refused before any member is created.
  // `deadline` (Create, Import, Delete): one that passes before the store
  // write begins (while the members are built, or while the write waits
  // in the store's queue) changes nothing: DEADLINE_EXCEEDED.
  absl::StatusOr<v1::GroupInfo> Create(const v1::CreateGroupRequest& request,
                                       Deadline deadline = Deadline::max());
  // Creates a group and its members from the members' exports (a group
  // moving between replicas), all or none, and durably so: members and
  // group record are stored in one transaction (SessionManager::ImportAll).
  absl::StatusOr<v1::GroupInfo> Import(const v1::ImportGroupRequest& request,
                                       Deadline deadline = Deadline::max());
  absl::StatusOr<v1::GroupInfo> Get(const std::string& id) const;
  // Applies the step to every member, all or none (SessionManager::
  // ApplyAll): a bad request (unknown group, batches that do not decode or
  // that the family rejects), a member's round that fails or is stopped,
  // or a store write that fails fails the whole step, and no member
  // changed.  A member past t answers as Step does (its cached reply, or
  // FAILED_PRECONDITION): that is its MemberStepResult.  `call` (may be
  // null): the RPC whose cancellation or deadline stops the members' rounds.
  absl::StatusOr<v1::GroupStepReply> Step(const v1::GroupStepRequest& request,
                                          const grpc::ServerContext* call = nullptr);
  // Deletes the group and its members (from the store in one transaction);
  // returns the member sessions deleted.
  absl::StatusOr<std::vector<std::string>> Delete(const std::string& id,
                                                  Deadline deadline = Deadline::max());
  // Deletes every session of routing key `key` (group `key` with its
  // members, and the lone sessions of the key) in one store transaction, so
  // that a crash leaves all of them or none (DropFencedSessions); returns
  // the sessions deleted, the group's members first.  For a fenced key
  // only: no step can be admitted meanwhile (the caller checks the fence).
  absl::StatusOr<std::vector<std::string>> DeleteKey(const std::string& key,
                                                     Deadline deadline = Deadline::max());
  // Deletes a session that belongs to no group; a member of a group (live,
  // being created or being deleted) is refused with FAILED_PRECONDITION.
  absl::Status DeleteSession(const std::string& session_id, Deadline deadline = Deadline::max());
  // Rolls back a session that belongs to no group (SessionManager::
  // Rollback); a member is refused with FAILED_PRECONDITION naming its
  // group: its members share each step, and one rolled back alone would
  // leave the group's steps for no index all its members expect.
  absl::StatusOr<v1::SessionInfo> RollbackSession(const std::string& session_id, int64_t to_t,
                                                  bool* rolled_back = nullptr);

 private:
  struct Group {
    std::vector<std::string> members;  // session ids, in member order
    std::string unavailable;           // why the group is not served ("" if it is)
  };

  // Group `id`'s members; with a shared store, a group not known here is
  // looked for in the store (another server created it) and kept.
  absl::StatusOr<std::vector<std::string>> Members(const std::string& id) const;
  // With a shared store, the stored group holding session `session_id`
  // ("" if none); "" without one.
  absl::StatusOr<std::string> StoredOwnerOf(const std::string& session_id) const;
  bool shared() const { return group_reader_ != nullptr; }
  // Claims group `group_id` and its member ids `ids` (busy_) unless the
  // group exists, a member is being deleted, or max_sessions would be
  // exceeded.
  absl::Status Claim(const std::string& group_id, const std::vector<std::string>& ids);
  // Builds and persists the members as a unit (SessionManager::CreateAll
  // or ImportAll), handing their records to the PersistAll it is given.
  using InstallMembers = std::function<absl::StatusOr<std::vector<v1::SessionInfo>>(
      const SessionManager::PersistAll&)>;
  // Creates group `group_id` of members `ids` (checked): claims them, has
  // `install` build the members, and stores members and group record in
  // one transaction; all or none.  `rpc` ("create_group", "import_group")
  // names its fault points for tests (server/fault_points.h).
  absl::StatusOr<v1::GroupInfo> Install(const char* rpc, const std::string& group_id,
                                        const std::vector<std::string>& ids,
                                        const InstallMembers& install, Deadline deadline);
  // The group claiming session `session_id`, or "".
  std::string OwnerOf(const std::string& session_id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SessionManager* const sessions_;
  SessionStore* const store_;
  // A shared store's (null otherwise): groups other servers created.
  StoredGroupReader* const group_reader_;
  mutable absl::Mutex mu_;
  // Mutable: with a shared store a lookup (Members) also learns a group
  // another server created, as a cache of the store's rows.
  mutable std::map<std::string, Group> groups_ ABSL_GUARDED_BY(mu_);
  // Groups being created or deleted (id -> member ids): their ids and their
  // members' ids are claimed, so no request can slip in between the
  // member sessions and the group record.
  std::map<std::string, std::vector<std::string>> busy_ ABSL_GUARDED_BY(mu_);
  // Lone sessions being deleted: a group may not claim them meanwhile (the
  // deletion would remove the new member).
  std::multiset<std::string> deleting_sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_GROUPS_H_
