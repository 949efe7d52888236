// Side-by-side groups (issue: "every peer algorithm on the same stream"):
// a group is a list of member sessions on the same family and data, each
// with its own algorithm and options.  One group step decodes the batches
// once and applies them to every member; each member keeps its own
// exactly-once index, so a retried group step re-applies nothing.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_GROUPS_H_
#define F2OBO_SERVER_GROUPS_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/session_manager.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class GroupManager {
 public:
  static constexpr int kMaxMembers = 16;

  // `store` may be null (in-memory).  Both must outlive this.
  GroupManager(SessionManager* sessions, SessionStore* store)
      : sessions_(sessions), store_(store) {}

  // Groups loaded at start (their member sessions were recovered already).
  void Restore(const std::vector<StoredGroup>& groups);

  // Creates every member session (all or none) and the group.
  absl::StatusOr<v1::GroupInfo> Create(const v1::CreateGroupRequest& request);
  absl::StatusOr<v1::GroupInfo> Get(const std::string& id) const;
  // Applies the step to every member.  Fails as a whole only when the
  // request itself is bad (unknown group, batches that do not decode or
  // that the family rejects): then no member changed.  Otherwise each
  // member's outcome is in its MemberStepResult.
  absl::StatusOr<v1::GroupStepReply> Step(const v1::GroupStepRequest& request);

 private:
  absl::StatusOr<std::vector<std::string>> Members(const std::string& id) const;

  SessionManager* const sessions_;
  SessionStore* const store_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<std::string>> groups_;  // guarded by mu_
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_GROUPS_H_
