// A session's checkpoints: which are kept (one after every checkpoint_every
// steps, and on request), where their bytes are (the store, in parts, in
// the transaction of their step; or memory without a store), a rollback
// to one, and the state a fork starts from (Installs::Fork).  The choices
// are explained at the top of checkpoints.cc.
//
// Thread-safety: thread-safe; the functions taking an entry require its
// mu (the caller's round or install holds it).
#ifndef F2OBO_SERVER_CHECKPOINTS_H_
#define F2OBO_SERVER_CHECKPOINTS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/limits.h"
#include "server/metrics_pipeline.h"
#include "server/session_entry.h"
#include "server/session_table.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class Checkpoints {
 public:
  // `store` may be null (checkpoints in memory).  All must outlive this.
  Checkpoints(const Limits* limits, MetricsPipeline* pipeline, SessionStore* store,
              SessionTable* table)
      : limits_(*limits), pipeline_(pipeline), store_(store), table_(table) {}

  // The proto's CheckpointSession and RollbackSession; on error nothing
  // changed.  `rolled_back` (may be null): set when the state changed (a
  // rollback to the current step changes nothing).
  absl::StatusOr<v1::SessionInfo> Take(const std::string& id);
  // With a shared store, a write that finds the stored session moved on
  // by another server reloads it and is done on it (step_runner.h).
  absl::StatusOr<v1::SessionInfo> Rollback(const std::string& id, int64_t to_t,
                                           bool* rolled_back = nullptr);
  // Takes and rollbacks answered from a reloaded session (a shared store).
  int64_t conflicts_resolved() const { return conflicts_resolved_.load(); }

  // Whether a checkpoint is kept after step `step`.
  bool Due(int64_t step) const;
  // Records checkpoint `next_t` (its bytes are kept only without a store)
  // and forgets all but the newest max_checkpoints.
  void Keep(SessionEntry& e, int64_t next_t, std::string bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The checkpoint in parts of state `s` of e: the parts changed since
  // e.checkpoint_base (those of e.changed_since_checkpoint and `step`), or
  // every non-empty part when `step` is null or there is no base.  Its head
  // is left empty.
  static CheckpointParts PartsOf(const SessionEntry& e, const SessionState& s,
                                 const std::vector<int64_t>* step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // After the store took the write of step next_t - 1 (which wrote the aux
  // parts `changed`, or every part if `complete`, with a checkpoint if
  // `checkpoint`): what the next checkpoint extends.
  static void NoteStepStored(SessionEntry& e, int64_t next_t, bool checkpoint, bool complete,
                             const std::vector<int64_t>& changed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The state after step `t`, decoded, for a fork (`what`): the current
  // state copied (its parts shared copy-on-write, nothing encoded), or the
  // checkpoint decoded part by part (SessionStore::LoadCheckpointState);
  // FAILED_PRECONDITION naming the nearest checkpoints otherwise.
  absl::StatusOr<Checkpoint> After(const SessionEntry& e, int64_t t, const char* what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);

 private:
  // Take and Rollback on `e`; with a shared store *stale is set (nothing
  // changed) when e is behind the stored session (dropped, or its write
  // refused by the compare-and-set; unless `fresh`, a rollback to e's
  // current step too, which e alone cannot tell).
  absl::StatusOr<v1::SessionInfo> TakeOn(const std::shared_ptr<SessionEntry>& e, bool* stale);
  absl::StatusOr<v1::SessionInfo> RollbackOn(const std::shared_ptr<SessionEntry>& e, int64_t to_t,
                                             bool* rolled_back, bool fresh, bool* stale);
  // Runs `once` on session `id`, reloading it while it is stale.
  template <typename Once>
  absl::StatusOr<v1::SessionInfo> OnStored(const std::string& id, const Once& once);
  bool shared() const { return store_ != nullptr && store_->shared(); }

  // The bytes of checkpoint `next_t`, from the store or from memory.
  absl::StatusOr<std::string> Bytes(const SessionEntry& e, int64_t next_t) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The state after step `t` as encoded bytes, for a rollback (`what`):
  // the current state when t is the last step applied, else its
  // checkpoint; FAILED_PRECONDITION naming the nearest checkpoints.
  absl::StatusOr<std::string> StateAfter(const SessionEntry& e, int64_t t, const char* what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // StateAfter's refusal of a t that is neither current nor a checkpoint.
  static absl::Status NoCheckpointAt(const SessionEntry& e, int64_t t, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);

  const Limits& limits_;
  MetricsPipeline* const pipeline_;
  SessionStore* const store_;
  SessionTable* const table_;
  std::atomic<int64_t> conflicts_resolved_{0};
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_CHECKPOINTS_H_
