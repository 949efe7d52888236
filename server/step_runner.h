// One step path for every way a step arrives: Step and the Steps stream
// (rows to decode), OracleSteps (data that carries its oracle:
// ApplyDecoded), StepGroup and StepsGroup (one upload applied to several
// sessions, all or none: ApplyAll).  Each answers a retry from the reply
// cache, runs the round on a copy of the state (PrepareStep), stores the
// parts it changed with a due checkpoint's in one transaction, and only
// then makes the new state current (CommitPrepared): on error nothing
// changed.  Rounds stop early (core/round_control.h) when their client
// gives up, the session is deleted, the server's shutdown grace is over,
// or they run for Limits::round_budget_seconds.
//
// A store shared by several servers (SessionStore::shared): this server's
// copy of a session may be behind the stored one (another server stepped,
// rolled back or deleted it).  Its writes compare-and-set the step index,
// so a stale copy never commits; a write refused so (ABORTED, or NOT_FOUND
// for a session deleted meanwhile), and a step whose index the copy does
// not expect, drop the copy and load the stored session again (the
// table's Drop and Find), and the request is answered as if it had arrived
// at the reloaded session: a retried step from its reply cache, a step at
// the wrong index refused naming the expected one, the step at its index
// applied.  Never applied twice, never INTERNAL: a session moving on under
// every reload (kReloads) answers UNAVAILABLE, to be retried.
//
// Thread-safety: thread-safe.  Different sessions step in parallel; one
// session's steps are serialized by its entry's mu (session_entry.h),
// held from the round to the commit.
#ifndef F2OBO_SERVER_STEP_RUNNER_H_
#define F2OBO_SERVER_STEP_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "grpcpp/server_context.h"
#include "server/call_round_control.h"
#include "server/checkpoints.h"
#include "server/limits.h"
#include "server/metrics_pipeline.h"
#include "server/session_entry.h"
#include "server/session_table.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class StepRunner {
 public:
  // `store` may be null (in-memory sessions).  All must outlive this.
  StepRunner(const Limits* limits, MetricsPipeline* pipeline, SessionStore* store,
             SessionTable* table, Checkpoints* checkpoints)
      : limits_(*limits),
        pipeline_(pipeline),
        store_(store),
        table_(table),
        checkpoints_(checkpoints) {}

  // Exactly-once step semantics (see the proto).  On error nothing changed.
  // `call` (may be null): the RPC whose cancellation or deadline stops the
  // round (a stopped round is not applied).
  absl::StatusOr<v1::StepReply> Step(const v1::StepRequest& request,
                                     const grpc::ServerContext* call = nullptr);

  // The two halves of Step, for callers applying one upload to several
  // sessions (groups): decode and check a step's batches (the top-level
  // ones and every task's) against the limits; apply decoded batches to
  // sessions as step t (ApplyAll, below).
  absl::StatusOr<std::shared_ptr<const StepData>> Decode(
      const v1::Batch& upper, const v1::Batch& inner,
      const google::protobuf::RepeatedPtrField<v1::TaskBatch>& tasks) const;
  // Applies decoded batches to session `id` as step t, as Step does after
  // decoding (OracleSteps: data that carries its oracle, not decoded rows).
  // `applied` (may be null) is called with the session right after the
  // step became current, under the session's lock (OracleSteps reads the
  // new y there); not for a replay or a refusal.
  absl::StatusOr<v1::StepReply> ApplyDecoded(
      const std::string& id, int64_t t, const std::shared_ptr<const StepData>& data,
      const grpc::ServerContext* call = nullptr,
      const std::function<void(const Session&)>& applied = nullptr);
  // Applies decoded batches to sessions `ids` as step t, all or none
  // (StepGroup; step_runner_group.cc).  A session past t answers from its
  // reply cache or refuses t, as Step does: that is its own outcome
  // (result i).  The others' rounds all run first, then their states are
  // stored in one store transaction, and only then do they all become
  // current: if any round fails, is stopped, or the store write fails (or
  // its deadline passes while it waits), the call fails naming the
  // session and none of them changed.  `group_id` names the faults' points
  // (server/fault_points.h).
  absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> ApplyAll(
      const std::string& group_id, const std::vector<std::string>& ids, int64_t t,
      const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call = nullptr);

  // Server shutdown: every running and later round stops (UNAVAILABLE,
  // nothing applied).  Irreversible.
  void StopRounds() { round_stops_.shutdown.store(true); }
  // What StopRounds sets, for rounds that wait outside Apply's own control
  // (an oracle round's wait for its client, server/oracle_stream.h).
  const RoundStopFlags* round_stops() const { return &round_stops_; }
  // Session `id`'s own stop request (set by its delete), kept alive by the
  // pointer: for the same rounds.
  absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> SessionStop(const std::string& id) const;
  // The family checks of session `id` on these batches, without a round.
  absl::Status ValidateBatches(const std::string& id, const StepData& data) const;
  // Steps answered from a reloaded session after a compare-and-set
  // conflict or a stale step index (a shared store).
  int64_t conflicts_resolved() const { return conflicts_resolved_.load(); }
  // Reloads tried before a step answers UNAVAILABLE.
  static constexpr int kReloads = 3;

 private:
  // A step's round, run and not yet stored: its pending state is in
  // e->session (Apply, ApplyAll).
  struct PreparedStep {
    SessionEntry* e = nullptr;
    int64_t t = 0;
    MetricsJob job;
    v1::StepReply reply;
    bool checkpoint = false;  // one is due after this step
    std::string encoded;      // without a store: the whole new state, when a checkpoint is due
    // With a store (StoredStateOf): the aux parts its write changes, and
    // whether it writes every part.
    std::vector<int64_t> changed;
    bool complete = false;
  };

  absl::Status CheckLimits(const v1::Batch& batch, const std::string& what) const;
  // Apply on the session as stored: Attempt on `e`, and while it finds e
  // stale, on the session reloaded (Reload).
  absl::StatusOr<v1::StepReply> Apply(std::shared_ptr<SessionEntry> e, int64_t t,
                                      const std::shared_ptr<const StepData>& data,
                                      const grpc::ServerContext* call,
                                      const std::function<void(const Session&)>& applied = nullptr);
  // Step t on e.  With a shared store, sets *stale (nothing changed) when e
  // may be behind the stored session: dropped, its write refused by the
  // compare-and-set, or (unless `fresh`: e was just loaded) at another
  // step index than t.
  absl::StatusOr<v1::StepReply> Attempt(SessionEntry& e, int64_t t,
                                        const std::shared_ptr<const StepData>& data,
                                        const grpc::ServerContext* call,
                                        const std::function<void(const Session&)>& applied,
                                        bool fresh, bool* stale);
  // Whether the store is shared by several servers.
  bool shared() const { return store_ != nullptr && store_->shared(); }
  // Drops `e` and finds its session again (loaded from the store).
  absl::StatusOr<std::shared_ptr<SessionEntry>> Reload(const std::shared_ptr<SessionEntry>& e);
  // ApplyAll's one attempt over `entries`, as Attempt.
  absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> AttemptAll(
      const std::string& group_id, const std::vector<std::shared_ptr<SessionEntry>>& entries,
      int64_t t, const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call,
      bool fresh, bool* stale);
  // Runs e's round of step t (e at t, not removed, its fence checked).
  // On error nothing changed.
  absl::StatusOr<PreparedStep> PrepareStep(SessionEntry& e, int64_t t, const StepData& data,
                                           const grpc::ServerContext* call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // What the store writes for a prepared step (StepStateOf with its
  // checkpoint), keyed by its next step index.
  StepState StoredStateOf(PreparedStep& p) const;  // requires p.e->mu (asserted)
  // What a step writes of e's pending state: its head and the aux parts the
  // round changed (all of them when the store holds the whole state);
  // `full` is the whole encoding for a due checkpoint, or empty.
  static StepState StepStateOf(const SessionEntry& e, const SessionStore* store, std::string full)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // After the store took p's write.
  static void NoteStored(SessionEntry& e, const PreparedStep& p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // Makes a stored prepared step current, published, cached and sent to
  // the metrics pipeline; returns its reply, moved out of `p` (requires
  // p.e->mu, asserted).
  v1::StepReply CommitPrepared(PreparedStep& p, const std::shared_ptr<const StepData>& data);

  const Limits& limits_;
  RoundStopFlags round_stops_;
  MetricsPipeline* const pipeline_;
  SessionStore* const store_;
  SessionTable* const table_;
  Checkpoints* const checkpoints_;
  std::atomic<int64_t> conflicts_resolved_{0};
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STEP_RUNNER_H_
