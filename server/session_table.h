// The sessions this server holds, by id: lookup, the ids being installed,
// the memory they reserve, their deletion, and the routing keys fenced
// away from this replica (server/session_fences.cc; the proto's SetFence).
//
// Lookup goes through Find only.  With a store shared by several servers
// (SessionStore::shared; EnableLoading), that is where a session not in
// memory is loaded on demand: its id claimed as an install claims one (so
// concurrent finds load it once), built by the loader
// (Installs::LoadStored, as recovery builds each stored session), then
// published.  And memory stays bounded: once the sessions held pass their
// budget (Limits::max_resident_sessions, else max_sessions) or their
// reserved memory passes max_total_state_bytes, the least recently found
// idle ones (held by nobody but the table: no round running, no call in
// flight) are evicted: dropped from memory, not from the store, their
// reservation returned; the next Find loads them again.  The embedded
// store is loaded whole at start (Installs::Recover) and nothing is
// evicted: its file is this server's alone and holds what one machine
// serves.
//
// Thread-safety: thread-safe.  Lock order: mu_ -> fence_mu_; mu_ is never
// held while an entry's lock is taken (session_entry.h).
#ifndef F2OBO_SERVER_SESSION_TABLE_H_
#define F2OBO_SERVER_SESSION_TABLE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/limits.h"
#include "server/session_entry.h"
#include "server/session_footprint.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class SessionTable {
 public:
  // `store` may be null (in-memory sessions).  Both must outlive this.
  SessionTable(const Limits* limits, SessionStore* store) : limits_(*limits), store_(store) {}

  // NOT_FOUND, or UNAVAILABLE for an id whose key is fenced (moved away:
  // a proxy with the old ring still sends it here).  With loading enabled,
  // a session not held is loaded from the store (its errors returned:
  // NOT_FOUND if it is not stored, UNAVAILABLE if the store cannot be
  // read, DATA_LOSS if its records are damaged).
  absl::StatusOr<std::shared_ptr<SessionEntry>> Find(const std::string& id) const;

  // A shared store's sessions: `loader` builds session `id` from the store
  // (not published; NOT_FOUND if it is not stored).  Set before serving.
  using Loader = std::function<absl::StatusOr<std::shared_ptr<SessionEntry>>(const std::string&)>;
  void EnableLoading(Loader loader);
  // Find for readers that must not answer from a copy behind the store
  // (GetSession, GetDecision, exports, a fork's source): with loading
  // enabled, a copy held is checked against the stored session's step
  // index and write version (one small read: SessionStore::CopyIsCurrent)
  // and reloaded if it is not the stored one.  Otherwise Find.
  absl::StatusOr<std::shared_ptr<SessionEntry>> FindFresh(const std::string& id) const;
  // Lets go of `entry`, a copy found stale (a write's compare-and-set
  // failed: another server moved the stored session on), if it is still
  // the one held: marked dropped, removed from memory (not from the
  // store), its memory released.  The next Find loads the session anew.
  void Drop(const std::shared_ptr<SessionEntry>& entry);
  // Sessions loaded on demand and evicted, since start.
  int64_t loads() const { return loads_.load(); }
  int64_t evictions() const { return evictions_.load(); }

  // Readers, from each session's published view (session_views.cc).
  // List: with loading enabled, also the sessions of the store not held
  // (their id, spec and next_t only: SessionStore::ListSessions).
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
  // Find's second half: loads session `id` (loading enabled, not held).
  absl::StatusOr<std::shared_ptr<SessionEntry>> Load(const std::string& id);
  // Marks `id` (held) as the most recently found.
  void Touch(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Erases `id` from the map and the recency list.
  void Erase(const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts idle sessions, least recently found first, until `extra_sessions`
  // more sessions and `extra_bytes` more reserved bytes fit the budget (or
  // none idle is left); the evicted go to *out, whose metrics channels the
  // caller closes once mu_ is released (Closed).  No-op unless loading is
  // enabled.
  void EvictLocked(size_t extra_sessions, int64_t extra_bytes,
                   std::vector<std::shared_ptr<SessionEntry>>* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Closed(const std::vector<std::shared_ptr<SessionEntry>>& evicted);
  // Reserve's and Claim's work under mu_, the sessions evicted to make
  // room in *evicted.
  absl::StatusOr<int64_t> ReserveLocked(int64_t memory, const SessionFootprint& f,
                                        const SessionConfig& config, bool enforce_limits,
                                        std::vector<std::shared_ptr<SessionEntry>>* evicted);
  absl::Status ClaimLocked(SessionEntry& entry, bool generate_id, bool check_fence,
                           std::vector<std::shared_ptr<SessionEntry>>* evicted);
  // The number of sessions held beyond which idle ones are evicted.
  size_t ResidentBudget() const;

  const Limits& limits_;
  SessionStore* const store_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<SessionEntry>> sessions_ ABSL_GUARDED_BY(mu_);
  // Ids reserved by installs in progress: not findable yet, but taken (and
  // counted toward max_sessions).  Waiters Await their leaving.
  std::set<std::string> installing_ ABSL_GUARDED_BY(mu_);
  uint64_t next_generated_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::mt19937_64 id_random_ ABSL_GUARDED_BY(mu_){std::random_device{}()};
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  Loader loader_;  // set before serving (EnableLoading), then read only
  // The held ids, most recently found first, and each one's place.
  std::list<std::string> recency_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::list<std::string>::iterator> recency_pos_
      ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> loads_{0};
  std::atomic<int64_t> evictions_{0};
  // Fenced routing key -> new owner ("" if its record was damaged).
  mutable absl::Mutex fence_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, std::string> fences_ ABSL_GUARDED_BY(fence_mu_);
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_TABLE_H_
