// The session store: what a server keeps of its sessions across restarts,
// as an interface, so that the session manager does not know where they are
// kept.  Implementations:
//  * SqliteSessionStore (sqlite_session_store.h): an embedded SQLite file in
//    --data_dir, one server per directory; the default.
//  * a shared database (--store=postgresql://...), which several servers
//    use at once (store_factory.h chooses).
//
// What is stored: each session's spec (as given, defaults filled in), its
// state after the last acknowledged step (core/state.h encoding; whole, or
// a head and its aux parts), its last replies (to answer a retry after a
// restart), a bounded number of checkpoints (earlier states, for
// RollbackSession and ForkSession, keyed by the state's next step index),
// groups (member lists) and fences (routing keys moving to another replica).
// Not stored: the previous step's batches; after a restart the first step's
// drift metrics say so instead.
//
// The contract every implementation keeps (tests/server/store/
// store_contract_test.cc runs it against each):
//  * Each call is one transaction: all of it is stored or none, also under
//    kill -9 (a group's steps, a group with its sessions, a rollback, a
//    deletion with its replies and checkpoints).
//  * Durability::kSync: a write returns only once durable.  kNone: steps
//    (CommitStep, CommitSteps) may return before they are durable (a crash
//    may lose recent steps); every other write is durable on return.
//  * `deadline`: if it passes while the write still waits for the store
//    (queued behind other writes), the write is withdrawn, never applied,
//    and DEADLINE_EXCEEDED returned; once it is being written it is waited
//    for.
//  * Every record carries a checksum binding its bytes to its session and
//    step index; a record failing it is reported (LoadAll's `damaged`,
//    DATA_LOSS from LoadCheckpoint) and not used, the others load.
//  * A full store (or its --max_store_bytes cap) refuses writes with
//    RESOURCE_EXHAUSTED (store_errors.h) and changes nothing; deletions
//    still succeed.
//  * Schema versions: a store written by a newer server is refused at open.
//
// Compare-and-set.  Each write carries the step index the caller's copy of
// the session is at: a step commits session `id` from next step index
// t - 1 to t; RollbackSession and PutCheckpoint say theirs.  A store shared
// by several servers commits a write only if the stored session is still
// at that index, in the same transaction, and otherwise returns ABORTED
// (nothing written; the caller reloads the session and answers from what is
// stored).  A shared store compares the session's contents too (a write
// version the store keeps per session, postgres_session_store.h): a copy at
// the right index whose session another server rewrote meanwhile is
// refused the same way.  The embedded store is its sessions' only writer,
// so its copy is the stored one and it does not check.
//
// Thread-safety: implementations are thread-safe.
#ifndef F2OBO_SERVER_STORE_SESSION_STORE_H_
#define F2OBO_SERVER_STORE_SESSION_STORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/state.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::server {

enum class Durability { kSync, kNone };

struct StoredSession {
  std::string id;
  v1::SessionSpec spec;
  Checkpoint state;                    // decoded (a head joined with its parts)
  std::vector<v1::StepReply> replies;  // oldest first
  // Next step index of each kept checkpoint, oldest first (their bytes are
  // read on use: LoadCheckpoint).
  std::vector<int64_t> checkpoints;
};

// A checkpoint in parts: its head (SerializeCheckpointHead) and the aux
// parts that changed since checkpoint `base` (a next step index) of the
// same session, which must be the newest the store holds before this one
// and itself in parts; base 0: every non-empty part (a chain of checkpoints
// starts here).  A part that became empty is given with empty bytes.  So a
// checkpoint costs what changed since the previous one, not the session's
// size.
struct CheckpointParts {
  std::string head;   // in a StepState: empty, the step's head is the checkpoint's
  int64_t count = 0;  // the state's aux vectors
  int64_t base = 0;
  // (index, EncodeAuxPart bytes), increasing.
  std::vector<std::pair<int64_t, std::string>> rows;
};

// A session's state after a step, in parts (core/state.h's
// SerializeCheckpointHead and EncodeAuxPart): what a step writes is the head
// and the aux vectors it changed, not the whole state.  LoadAll joins the
// head and parts back into the whole state.
struct StepState {
  std::string head;
  int64_t aux_count = 0;  // the state's aux vectors
  // (index, EncodeAuxPart bytes) of each changed aux vector, increasing;
  // empty bytes for a vector that is now empty (no part is kept for it).
  std::vector<std::pair<int64_t, std::string>> aux_rows;
  // The whole encoding, when the step's state is also stored as a
  // checkpoint (else empty).
  std::string full;
  // Whether parts at or beyond aux_count may be stored (the state shrank,
  // or the store held the whole state): they are removed.
  bool trim = true;
  // Whether aux_rows holds every non-empty part (not only the changed).
  bool complete = false;
  // A due checkpoint in parts, instead of `full` (its head: the step's).
  bool checkpoint_in_parts = false;
  CheckpointParts checkpoint;
};

// One session as PutSession writes it (PutGroupWithSessions: several in
// one transaction): a new session (create, import, fork, transfer), which
// replaces every record of an earlier session of the same id.
struct SessionRecord {
  std::string id;
  v1::SessionSpec spec;
  // SerializeState bytes: the whole encoding, or with `parts` its head
  // (SerializeCheckpointHead).
  std::string state;
  int64_t t = 0;  // the state's next step index
  std::vector<v1::StepReply> replies;
  bool checkpoint = false;  // store the state as the session's first checkpoint
  // In parts: the head is `state` and the aux parts are parts->aux, stored
  // as a step leaves them; the first checkpoint, if asked, is a checkpoint
  // in parts starting a chain (base 0).  The store reads each part where it
  // is (an immutable snapshot, shared, never copied), so a new session of
  // 1,000,000 tasks is written without a second, encoded copy in memory.
  std::shared_ptr<const SessionState> parts;
};

// What ListSessions gives of a stored session without loading it.
struct SessionSummary {
  std::string id;
  v1::SessionSpec spec;  // empty if its record is damaged
  int64_t t = 0;         // the stored state's next step index
};

struct StoredGroup {
  std::string id;
  std::vector<std::string> members;  // session ids, in member order
};

// A routing key whose sessions are moving to replica `target` (scale-out:
// the proto's SetFence).  Stored so that a crash cannot lift it.
struct StoredFence {
  std::string key;
  std::string target;
};

struct LoadedStore {
  std::vector<StoredSession> sessions;
  std::vector<StoredGroup> groups;
  // A fence record failing its checksum is loaded with target "" (still a
  // fence: its sessions must not step) and reported in `damaged`.
  std::vector<StoredFence> fences;
  std::vector<std::string> damaged;  // one message per record not loaded
};

class SessionStore {
 public:
  using Deadline = std::chrono::system_clock::time_point;
  static constexpr Deadline kNoDeadline = Deadline::max();
  // A step index a write does not compare (see "Compare-and-set" above).
  static constexpr int64_t kAnyT = -1;

  virtual ~SessionStore() = default;

  // Every stored session (checksum-verified; damaged ones are reported in
  // `damaged`, not returned), group and fence.
  virtual absl::StatusOr<LoadedStore> LoadAll() = 0;
  // LoadAll without the sessions: what a server sharing the store reads
  // at start (its sessions are loaded on demand: LoadSession).
  virtual absl::StatusOr<LoadedStore> LoadGroupsAndFences() {
    absl::StatusOr<LoadedStore> all = LoadAll();
    if (all.ok()) all->sessions.clear();
    return all;
  }
  // Session `id` as LoadAll loads it, from one snapshot: NOT_FOUND if it is
  // not stored, DATA_LOSS naming the damaged record.
  virtual absl::StatusOr<StoredSession> LoadSession(const std::string& id) = 0;
  // Session `id`'s stored next step index (NOT_FOUND if it is not
  // stored): how a server sharing the store tells that its copy is behind.
  virtual absl::StatusOr<int64_t> StoredStepIndex(const std::string& id) = 0;
  // Whether this server's copy of session `id`, at next step index `t`, is
  // the stored session (NOT_FOUND if it is not stored): the stored one is
  // at `t` and, in a shared store, has not been written since this server
  // last read or wrote it (another server may have rolled it back and
  // stepped it to `t` again, with other contents).
  virtual absl::StatusOr<bool> CopyIsCurrent(const std::string& id, int64_t t) {
    absl::StatusOr<int64_t> stored = StoredStepIndex(id);
    if (!stored.ok()) return stored.status();
    return *stored == t;
  }
  // Every stored session's id, spec and next step index, by id, without
  // their states (ListSessions of a shared store: the sessions no server
  // holds in memory too).  A spec failing its checksum is left empty.
  virtual absl::StatusOr<std::vector<SessionSummary>> ListSessions() = 0;
  // Whether other servers write this store's sessions too (a shared
  // database): a server then loads a session when it is first asked for
  // it, and its writes meet the compare-and-set above.  The embedded store
  // is one server's own.
  virtual bool shared() const { return false; }

  // Stores a new session (SessionRecord says what it replaces).  A shared
  // store never replaces one: ALREADY_EXISTS, nothing written, if session
  // `id` is stored (two servers creating or importing one id at once: the
  // first to commit has it).  The same for PutGroupWithSessions' members
  // and group.
  virtual absl::Status PutSession(SessionRecord record, Deadline deadline = kNoDeadline) = 0;
  // The same from its fields (the state whole).
  absl::Status PutSession(const std::string& id, const v1::SessionSpec& spec, std::string state,
                          int64_t t, const std::vector<v1::StepReply>& replies = {},
                          bool checkpoint = false, Deadline deadline = kNoDeadline) {
    return PutSession(SessionRecord{id, spec, std::move(state), t, replies, checkpoint, nullptr},
                      deadline);
  }
  // Removes session `id` with its replies and checkpoints.
  virtual absl::Status DeleteSession(const std::string& id, Deadline deadline = kNoDeadline) = 0;

  // Groups: `members` are session ids, in member order.
  virtual absl::Status PutGroup(const std::string& id, const std::vector<std::string>& members) = 0;
  // Stores `members` (each as PutSession) and the group `id` of them, in one
  // transaction: a crash leaves either all of them or none.
  virtual absl::Status PutGroupWithSessions(const std::string& id,
                                            const std::vector<SessionRecord>& members,
                                            Deadline deadline = kNoDeadline) = 0;
  // Removes group `id` and its member sessions (with their replies and
  // checkpoints), in one transaction.  `members` may also name sessions of
  // no group, and `id` a group that does not exist: DropFencedSessions
  // removes a routing key's group and lone sessions so, all or none.
  virtual absl::Status DeleteGroup(const std::string& id, const std::vector<std::string>& members,
                                   Deadline deadline = kNoDeadline) = 0;

  // Records an acknowledged step, from next step index t - 1 to t: the
  // session's state after it and its reply; keeps the newest `keep_replies`
  // replies.  With `keep_checkpoints` > 0 the state is also stored as a
  // checkpoint (same transaction) and the newest `keep_checkpoints` are
  // kept.  NOT_FOUND, nothing written, if the session is not stored.
  // `state` is the whole encoding.
  virtual absl::Status CommitStep(const std::string& id, int64_t t, std::string state,
                                  const v1::StepReply& reply, int keep_replies,
                                  int keep_checkpoints = 0, Deadline deadline = kNoDeadline) = 0;
  // The same with the state in parts (StepState): the head replaces the
  // stored one, the changed aux parts replace theirs, parts at or beyond
  // aux_count are removed (state.trim).  FAILED_PRECONDITION, nothing
  // written, for a partial state while NeedsCompleteState(id).
  virtual absl::Status CommitStep(const std::string& id, int64_t t, StepState state,
                                  const v1::StepReply& reply, int keep_replies,
                                  int keep_checkpoints = 0, Deadline deadline = kNoDeadline) = 0;
  // Several sessions' steps (a group step, each as CommitStep with a
  // StepState) in one transaction: all are stored or none.
  struct SessionStep {
    std::string id;
    int64_t t = 0;  // from t - 1 to t, as CommitStep
    StepState state;
    v1::StepReply reply;
    int keep_checkpoints = 0;
  };
  virtual absl::Status CommitSteps(std::vector<SessionStep> steps, int keep_replies,
                                   Deadline deadline = kNoDeadline) = 0;
  // Whether session `id`'s next step must write its state complete (every
  // part): a step write of it failed, so the parts stored may lack that
  // step's changes.  Until one complete write succeeds, the store refuses
  // the session's partial step writes (FAILED_PRECONDITION), so that no
  // later step is stored over the missing changes.
  virtual bool NeedsCompleteState(const std::string& id) const = 0;

  // Checkpoints, each durable (whatever the policy) before returning.
  // Stores `state` (next step index `t`, the session's own: a checkpoint of
  // the session as it is, so `t` is also the compare-and-set's) as a
  // checkpoint of session `id`, replacing one at the same t; keeps the
  // newest `keep` (>= 1).
  virtual absl::Status PutCheckpoint(const std::string& id, int64_t t, std::string state,
                                     int keep) = 0;
  // The same in parts (CheckpointParts).  FAILED_PRECONDITION, nothing
  // written, if `parts.base` is not the newest checkpoint before t or not
  // in parts.
  virtual absl::Status PutCheckpoint(const std::string& id, int64_t t, CheckpointParts parts,
                                     int keep) = 0;
  // The whole encoding of checkpoint `t` of session `id`, checksum-verified:
  // NOT_FOUND if there is none, DATA_LOSS if it is damaged.
  virtual absl::StatusOr<std::string> LoadCheckpoint(const std::string& id, int64_t t) = 0;
  // The same decoded (a checkpoint in parts: each part decoded as it is
  // read, never joined into the whole encoding): a fork's starting point.
  // DATA_LOSS also when the bytes do not decode.
  virtual absl::StatusOr<Checkpoint> LoadCheckpointState(const std::string& id, int64_t t) = 0;
  // Rolls session `id` back from next step index `from_t` (kAnyT: not
  // compared), in one transaction: its state becomes `state` (next step
  // index `t`, the bytes of its checkpoint at t), its reply cache
  // `replies`, and its checkpoints after t are removed.  NOT_FOUND if the
  // session is not stored.
  virtual absl::Status RollbackSession(const std::string& id, int64_t t, std::string state,
                                       const std::vector<v1::StepReply>& replies,
                                       int64_t from_t = kAnyT) = 0;

  // Fences, durable before returning: sets the fence of routing key `key`
  // to `target`, or removes it when `target` is empty.
  virtual absl::Status PutFence(const std::string& key, const std::string& target) = 0;

  // Caps the store at about `max_bytes` (0: no cap, --max_store_bytes): a
  // write that would grow it further fails like a full disk
  // (RESOURCE_EXHAUSTED), while deletions still succeed.
  virtual absl::Status LimitSize(int64_t max_bytes) = 0;
  // The largest record (a state, a spec, a reply) the store can hold.
  virtual int64_t max_record_bytes() const = 0;
  virtual Durability durability() const = 0;

  // Observability (server/store_metrics.h).  Connections to the database
  // made after the first ones (a broken one replaced), and commits whose
  // outcome was unknown and read back: 0 for a store without connections.
  virtual int64_t reconnects() const { return 0; }
  virtual int64_t commits_read_back() const { return 0; }
  // `observer` is called with the latency, in seconds, of each committed
  // write transaction (set before the store is used; a shared store's).
  void ObserveCommits(std::function<void(double)> observer) {
    commit_observer_ = std::move(observer);
  }

 protected:
  void CommitObserved(double seconds) const {
    if (commit_observer_) commit_observer_(seconds);
  }

 private:
  std::function<void(double)> commit_observer_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_SESSION_STORE_H_
