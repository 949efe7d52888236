// The sessions this server holds, by id: lookup, the ids being installed,
// the memory they reserve, their deletion, and the routing keys fenced
// away from this replica (server/session_fences.cc; the proto's SetFence).
//
// Lookup goes through Find only, so that this is where a session not in
// memory will be loaded on demand from a shared store (claimed as an
// install claims an id, built by Installs::InstallStored as recovery
// builds each stored session, published), and where an idle one will be
// evicted (Remove without its store write; its Reservation returned).
//
// Thread-safety: thread-safe.  Lock order: mu_ -> fence_mu_; mu_ is never
// held while an entry's lock is taken (session_entry.h).
#ifndef F2OBO_SERVER_SESSION_TABLE_H_
#define F2OBO_SERVER_SESSION_TABLE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/limits.h"
#include "server/session_entry.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class SessionTable {
 public:
  // `store` may be null (in-memory sessions).  Both must outlive this.
  SessionTable(const Limits* limits, SessionStore* store) : limits_(*limits), store_(store) {}

  // NOT_FOUND, or UNAVAILABLE for an id whose key is fenced (moved away:
  // a proxy with the old ring still sends it here).
  absl::StatusOr<std::shared_ptr<SessionEntry>> Find(const std::string& id) const;

  // Readers, from each session's published view (session_views.cc).
  absl::StatusOr<v1::SessionInfo> Get(const std::string& id) const;
  std::vector<v1::SessionInfo> List() const;
  absl::StatusOr<v1::Decision> GetDecision(const std::string& id) const;
  absl::StatusOr<std::shared_ptr<SessionMetrics>> Metrics(const std::string& id) const;
  size_t size() const;

  // Memory reserved, released on destruction unless kept by an entry.
  class Reservation {
   public:
    Reservation(SessionTable* table, int64_t bytes) : table_(table), bytes_(bytes) {}
    ~Reservation() {
      if (table_ != nullptr) table_->Release(bytes_);
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    int64_t bytes() const { return bytes_; }
    void Keep() { table_ = nullptr; }

   private:
    SessionTable* table_;
    int64_t bytes_;
  };
  // Room for a session of `config` (given as `spec`), before anything is
  // allocated: its records must fit the store's maximum record size and
  // its memory the max_total_state_bytes budget (unless not
  // `enforce_limits`: recovery); RESOURCE_EXHAUSTED naming the limit
  // otherwise.  Returns the bytes now reserved (to be released).
  absl::StatusOr<int64_t> Reserve(const SessionConfig& config, const v1::SessionSpec& spec,
                                  bool enforce_limits);
  void Release(int64_t bytes);
  // Memory reserved by the sessions held (and being created), in bytes.
  int64_t reserved_bytes() const;

  // An install's steps: Claim reserves entry's id (generated if asked;
  // refused if taken, if max_sessions is reached or, with `check_fence`,
  // if its key is fenced), waiting for an install of the same id to end;
  // the caller then persists it, or releases the id (Unclaim); Publish
  // makes the claimed entry findable.
  absl::Status Claim(SessionEntry& entry, bool generate_id, bool check_fence);
  void Unclaim(const std::string& id);
  void Publish(std::shared_ptr<SessionEntry> entry);

  // Deletes session `id`: stops its round, removes it from the store
  // (unless not `from_store`: the caller already did, as a group deletion
  // removes all its members in one transaction), then from the table, and
  // releases its memory.  Honours `deadline` as the installs do.
  absl::Status Remove(const std::string& id, bool from_store, Deadline deadline);

  // Scale-out fences (session_fences.cc).  The routing key of a session or
  // group id: up to its first '.'.
  static std::string RoutingKey(const std::string& id);
  // UNAVAILABLE naming the new owner when the routing key of session (or
  // group) `id` is fenced; OK otherwise.
  absl::Status CheckFence(const std::string& id) const;
  // Fences `key` towards replica `target` (durable first).  Returns once
  // no round or install of a session of that key admitted before the
  // fence is still running, so an export taken afterwards is final.
  absl::Status SetFence(const std::string& key, const std::string& target);
  // NOT_FOUND when `key` has no fence.
  absl::Status LiftFence(const std::string& key);
  std::vector<StoredFence> Fences() const;
  // The stored fences, at recovery.
  void LoadFences(const std::vector<StoredFence>& fences);
  // The ids of the local sessions whose routing key is `key`.
  std::vector<std::string> SessionsOfKey(const std::string& key) const;

 private:
  const Limits& limits_;
  SessionStore* const store_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<SessionEntry>> sessions_ ABSL_GUARDED_BY(mu_);
  // Ids reserved by installs in progress: not findable yet, but taken (and
  // counted toward max_sessions).  Waiters Await their leaving.
  std::set<std::string> installing_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generated_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Fenced routing key -> new owner ("" if its record was damaged).
  mutable absl::Mutex fence_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, std::string> fences_ ABSL_GUARDED_BY(fence_mu_);
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_TABLE_H_
