// Owns every session: creation, lookup, exactly-once step application,
// decisions.  The gRPC layer is a thin shell around this class.
//
// Thread-safety: thread-safe.  Different sessions step in parallel; one
// session's steps (and its other writers) are serialized by its own mutex.
// Readers (Get, List, GetDecision) never take it: they read an immutable
// view of the last committed state, so no read waits for a round.  Rounds
// stop early (core/round_control.h) when their client gives up, the session
// is deleted, the server's shutdown grace is over, or they run for
// Limits::round_budget_seconds.  Lock order: the map lock is never held while
// a session lock is taken; an entry's locks nest mu -> sums_mu -> view_mu
// and mu -> metrics_mu, and mu_ -> fence_mu_ (ABSL_ACQUIRED_BEFORE/AFTER
// below: clang's analysis checks them, scripts/check_thread_safety.py);
// and a step holding mu may take its metrics channel's turn (the pipeline's
// SessionMetrics::process_mu_, when it helps a late worker), which nests
// before sums_mu and is never taken by a holder of sums_mu or view_mu.
#ifndef F2OBO_SERVER_SESSION_MANAGER_H_
#define F2OBO_SERVER_SESSION_MANAGER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/f2obo.pb.h"
#include "f2obo/v1/transfer.pb.h"
#include "grpcpp/server_context.h"
#include "server/call_round_control.h"
#include "server/metrics_pipeline.h"
#include "server/store/session_store.h"

namespace f2obo::server {

// What a SessionManager allows: one member per F2OBO_LIMIT_FLAG of
// server_flags.def (the flag's name and default; the flag's help says what
// it limits), and the memory limits.
struct Limits {
#define F2OBO_SERVER_FLAG(type, name, def, rule, help)
#define F2OBO_LIMIT_FLAG(type, name, def, rule, help) type name = def;
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG
  // Per-session state size guard (doubles of y), and the memory of every
  // session together (session_footprint.h's estimates, reserved at
  // creation before anything is allocated; 0: no limit).  f2obo-server
  // derives both from its --max_y_dim and --max_total_state_bytes
  // (DeriveMemoryLimits, machine_memory.h).
  int64_t max_y_dim = 50000000;
  int64_t max_total_state_bytes = 0;
  // The server's --max_message_bytes (0: not checked): an oracle session
  // whose vectors cannot each fit one message is refused at create.
  int64_t max_message_bytes = 0;
};

// A call's deadline (grpc::ServerContext::deadline()); max(): none.
using Deadline = std::chrono::system_clock::time_point;

class SessionManager {
 public:
  // `store` may be null (in-memory sessions).  Both must outlive this.
  SessionManager(Limits limits, MetricsPipeline* pipeline, SessionStore* store);

  // Loads every stored session, each resuming at its last acknowledged
  // step.  Returns one message per session that could not be loaded; the
  // stored groups go to `groups` (may be null).
  absl::StatusOr<std::vector<std::string>> Recover(std::vector<StoredGroup>* groups = nullptr);

  // Create, Import, Fork and Delete honour the call's `deadline`: checked
  // before the store write and passed to it, so that a write withdrawn or
  // never begun answers DEADLINE_EXCEEDED and changed nothing.  A deadline
  // that passes once the store's writer has begun the write does not stop
  // it (the client sees DEADLINE_EXCEEDED from its own side; a retry tells:
  // ALREADY_EXISTS, or NOT_FOUND for a delete).
  absl::StatusOr<v1::SessionInfo> Create(const v1::CreateSessionRequest& request,
                                         Deadline deadline = Deadline::max());
  // `max_bytes`: the largest export a message may carry (the server's
  // --max_message_bytes); a larger one is refused with RESOURCE_EXHAUSTED
  // naming ExportSessionStream, before it is encoded.
  absl::StatusOr<v1::SessionExport> Export(const std::string& id,
                                           int64_t max_bytes = INT64_MAX) const;
  absl::StatusOr<v1::SessionInfo> Import(const v1::ImportSessionRequest& request,
                                         Deadline deadline = Deadline::max());
  // Imports several sessions as a unit (ImportGroup; server/
  // session_install.cc): each is checked and built like Import, all must
  // be of one problem class and family (INVALID_ARGUMENT otherwise), none is
  // findable until `persist` has written all their records (with whatever
  // the caller adds) in one store transaction, and if anything fails none
  // exists.  `field` names the requests in errors ("members" ->
  // "members[1]: ...").
  using PersistAll = std::function<absl::Status(const std::vector<SessionRecord>&)>;
  absl::StatusOr<std::vector<v1::SessionInfo>> ImportAll(
      const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
      const PersistAll& persist);
  // Creates several sessions as a unit (CreateGroup), as ImportAll: each
  // is checked and built like Create (its session_id must be given), none
  // is findable until `persist` has written them all, and if anything fails
  // none exists.  `name(i)` names request i in errors.
  absl::StatusOr<std::vector<v1::SessionInfo>> CreateAll(
      const std::vector<v1::CreateSessionRequest>& requests,
      const std::function<std::string(size_t)>& name, const PersistAll& persist);
  // Sessions larger than a message (server/session_transfer.cc; the
  // proto's ExportSessionStream and ImportSessionStream).  ExportChunks
  // hands session `id`'s export to `write` chunk by chunk, each of at most
  // about `chunk_bytes`, from a snapshot of its state taken when it starts;
  // an error from `write` (the client went away, the server is shutting
  // down) stops it and is returned.
  // ImportChunks builds a session from the messages `read` gives (true: a
  // message; false: the stream's end; an error: the stream broke, returned
  // as is) with Import's checks, and installs it only after the end chunk
  // passed them all; on any error nothing exists and nothing is stored.
  using ChunkSink = std::function<absl::Status(const v1::SessionChunk&)>;
  using ChunkSource = std::function<absl::StatusOr<bool>(v1::ImportSessionStreamRequest*)>;
  absl::Status ExportChunks(const std::string& id, int64_t chunk_bytes,
                            const ChunkSink& write) const;
  absl::StatusOr<v1::SessionInfo> ImportChunks(const ChunkSource& read,
                                               Deadline deadline = Deadline::max());
  absl::StatusOr<v1::SessionInfo> Get(const std::string& id) const;
  std::vector<v1::SessionInfo> List() const;
  // `from_store` false: the caller already removed the session from the
  // store (a group deletion removes all its members in one transaction).
  absl::Status Delete(const std::string& id, bool from_store = true,
                      Deadline deadline = Deadline::max());

  // Exactly-once step semantics (see the proto).  On error nothing changed.
  // `call` (may be null): the RPC whose cancellation or deadline stops the
  // round (a stopped round is not applied).
  absl::StatusOr<v1::StepReply> Step(const v1::StepRequest& request,
                                     const grpc::ServerContext* call = nullptr);

  // Checkpoints, rollback and fork (server/session_checkpoints.cc; the
  // proto documents each).  On error nothing changed.
  absl::StatusOr<v1::SessionInfo> TakeCheckpoint(const std::string& id);
  // `rolled_back` (may be null): set when the state changed (a rollback to
  // the current step changes nothing).
  absl::StatusOr<v1::SessionInfo> Rollback(const std::string& id, int64_t to_t,
                                           bool* rolled_back = nullptr);
  absl::StatusOr<v1::SessionInfo> Fork(const v1::ForkSessionRequest& request,
                                       Deadline deadline = Deadline::max());

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
  // (StepGroup; server/session_group_step.cc).  A session past t answers
  // from its reply cache or refuses t, as Step does: that is its own
  // outcome (result i).  The others' rounds all run first, then their
  // states are stored in one store transaction, and only then do they all
  // become current: if any round fails, is stopped, or the store write
  // fails (or its deadline passes while it waits), the call fails naming
  // the session and none of them changed.  `group_id` names the faults'
  // points (server/fault_points.h).
  absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> ApplyAll(
      const std::string& group_id, const std::vector<std::string>& ids, int64_t t,
      const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call = nullptr);

  // Scale-out fences (server/session_fences.cc; the proto's SetFence).
  // The routing key of a session or group id: up to its first '.'.
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
  // The ids of the local sessions whose routing key is `key`.
  std::vector<std::string> SessionsOfKey(const std::string& key) const;

  // Server shutdown: every running and later round stops (UNAVAILABLE,
  // nothing applied).  Irreversible.
  void StopRounds() { round_stops_.shutdown.store(true); }
  // What StopRounds sets, for rounds that wait outside Apply's own control
  // (an oracle round's wait for its client, server/oracle_stream.h).
  const RoundStopFlags* round_stops() const { return &round_stops_; }
  // Session `id`'s own stop request (set by its Delete), kept alive by the
  // pointer: for the same rounds.
  absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> SessionStop(const std::string& id) const;
  // The family checks of session `id` on these batches, without a round.
  absl::Status ValidateBatches(const std::string& id, const StepData& data) const;

  absl::StatusOr<v1::Decision> GetDecision(const std::string& id) const;
  absl::StatusOr<std::shared_ptr<SessionMetrics>> Metrics(const std::string& id) const;

  size_t size() const;
  const Limits& limits() const { return limits_; }
  // Memory reserved by the sessions held (and being created), in bytes.
  int64_t reserved_bytes() const;

 private:
  // What readers of a session see: its last committed state, immutable.
  // `session` is read only for what never changes after creation (config,
  // problem shapes); the running sums, which do change, are copied.
  struct View {
    std::shared_ptr<const Session> session;
    std::shared_ptr<const SessionState> state;
    RunningMetrics metrics;
    std::vector<int64_t> checkpoints;  // the steps after which one was kept
  };

  struct Entry {
    std::string id;
    int exact_every = 0;
    // Serializes steps and other writers.
    mutable absl::Mutex mu ABSL_ACQUIRED_BEFORE(sums_mu, metrics_mu);
    // The running sums (session->metrics()), which the metrics worker adds
    // to without waiting for a round: read and written under sums_mu;
    // `session` and `generation` are replaced under mu and sums_mu.
    mutable absl::Mutex sums_mu ABSL_ACQUIRED_BEFORE(view_mu);
    // Published under mu after every change; read under view_mu alone.
    mutable absl::Mutex view_mu;
    std::shared_ptr<const View> view ABSL_GUARDED_BY(view_mu);
    // Set by Delete before it waits for mu, so that a running round stops.
    std::atomic<bool> stop_rounds{false};
    // Set before the entry is findable; replaced by a rollback (under mu
    // and metrics_mu), so that a new watcher takes only metrics_mu and never
    // waits for a round.
    mutable absl::Mutex metrics_mu;
    // Read under mu or metrics_mu, written under both: like `session`,
    // beyond what one annotation names.
    std::shared_ptr<SessionMetrics> metrics;
    // A fork's: its source's step metrics up to the fork point, which its
    // channel starts with (PublishClaimed; then emptied).
    std::vector<v1::StepMetrics> inherited_metrics;
    // Guarded by mu and sums_mu together (see sums_mu): an annotation
    // names one lock, so the analysis does not check this pointer.
    std::shared_ptr<Session> session;
    std::deque<v1::StepReply> replies ABSL_GUARDED_BY(mu);  // newest last
    // Whether the store's row holds session->state() in parts (so a step
    // writes only the parts it changed): true after a create, import or
    // fork (RecordOf); false after a load or rollback, which leave the
    // whole state.
    bool store_in_parts ABSL_GUARDED_BY(mu) = false;
    // The kept checkpoints by their state's next step index; their bytes
    // are in the store, or in `memory_checkpoints` when there is none.
    std::set<int64_t> checkpoints ABSL_GUARDED_BY(mu);
    std::map<int64_t, std::string> memory_checkpoints ABSL_GUARDED_BY(mu);
    // Checkpoints in parts (with a store; server/store/checkpoints.cc): the
    // next step index of the newest checkpoint written in parts, which the
    // next one extends (0: none, the next is written with every part), and
    // the aux parts changed since it.
    int64_t checkpoint_base ABSL_GUARDED_BY(mu) = 0;
    std::set<int64_t> changed_since_checkpoint ABSL_GUARDED_BY(mu);
    // Bumped by a rollback: metrics of the abandoned steps, still in the
    // pipeline, must not add to the restored running sums.
    uint64_t generation = 0;  // guarded by mu and sums_mu (writes: both), as `session`
    // Set by Delete once the session left the map and the store: holders
    // of the entry found before then must neither serve it nor persist it.
    bool removed ABSL_GUARDED_BY(mu) = false;
    int64_t reserved_bytes = 0;  // its share of reserved_bytes_, released by Delete
  };

  // Reserved memory, released on destruction unless kept by an entry.
  class Reservation {
   public:
    Reservation(SessionManager* manager, int64_t bytes) : manager_(manager), bytes_(bytes) {}
    ~Reservation() {
      if (manager_ != nullptr) manager_->Release(bytes_);
    }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;
    int64_t bytes() const { return bytes_; }
    void Keep() { manager_ = nullptr; }

   private:
    SessionManager* manager_;
    int64_t bytes_;
  };

  absl::StatusOr<std::shared_ptr<Entry>> Find(const std::string& id) const;
  // NOT_FOUND for an entry deleted after it was found.  Requires e.mu.
  static absl::Status CheckNotRemoved(const Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The exact-metrics period of a session made from `spec`.
  static int ExactEvery(const v1::SessionSpec& spec, const Session& session);
  // The reply cache of an import, against the state it comes with.
  static absl::Status CheckImportedReplies(const v1::SessionExport& ex, const SessionState& state);
  // Room for a session of `config` (given as `spec`), before anything is
  // allocated: its records must fit the store's maximum record size and
  // its memory the max_total_state_bytes budget (unless not
  // `enforce_limits`: recovery); RESOURCE_EXHAUSTED naming the limit
  // otherwise.  Returns the bytes now reserved (to be released).
  absl::StatusOr<int64_t> Reserve(const SessionConfig& config, const v1::SessionSpec& spec,
                                  bool enforce_limits);
  void Release(int64_t bytes);
  // Validates `spec` against the limits and builds its session config;
  // `unread`: what becomes of options its algorithm does not read (refused
  // for a spec a client writes, dropped for one a server wrote: imports).
  absl::StatusOr<SessionConfig> CheckedConfig(const v1::SessionSpec& spec,
                                              UnreadOptions unread = UnreadOptions::kRefuse) const;
  // Makes `entry` (session set, id possibly empty) reachable: reserves an
  // id (generated if asked), persists it (unless `persisted`), opens its
  // metrics, and only then publishes it in the map.
  absl::StatusOr<v1::SessionInfo> Install(std::shared_ptr<Entry> entry, bool generate_id,
                                          bool persisted, Deadline deadline = Deadline::max());
  // Install's steps, for callers that persist several entries at once
  // (ImportAll).  Claim reserves entry's id (generated if asked; refused if
  // taken, if max_sessions is reached or, with `check_fence`, if its key is
  // fenced); the caller then persists it, or releases the id (Unclaim);
  // PublishClaimed opens its metrics and makes it findable.
  absl::Status Claim(Entry& entry, bool generate_id, bool check_fence);
  void Unclaim(const std::string& id);
  // What the store writes of a new session: its head and its state's
  // parts (SessionRecord::parts), with its first checkpoint if asked.
  SessionRecord RecordOf(const Entry& e, bool checkpoint) const;
  // What a step writes of e's pending state: its head and the aux parts the
  // round changed (all of them when the store holds the whole state);
  // `full` is the whole encoding for a due checkpoint, or empty.
  static StepState StepStateOf(const Entry& e, const SessionStore* store, std::string full)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // `stored`: the store holds it as RecordOf wrote it (in parts, with its
  // first checkpoint if `checkpoint`).
  v1::SessionInfo PublishClaimed(std::shared_ptr<Entry> entry,
                                 std::unique_ptr<MetricsEvaluator> evaluator, bool checkpoint,
                                 bool stored);
  // Create's checks and the entry it builds (not installed, id as given,
  // possibly empty); `reserved` receives its memory reservation.
  absl::StatusOr<std::shared_ptr<Entry>> PrepareCreate(const v1::CreateSessionRequest& request,
                                                       std::unique_ptr<Reservation>& reserved);
  // CreateAll's and ImportAll's common part: claims every entry's id,
  // calls `persist` with their records, then publishes them all; on any
  // failure none is claimed or published (errors named by `name(i)`).
  absl::StatusOr<std::vector<v1::SessionInfo>> InstallAll(
      std::vector<std::shared_ptr<Entry>> entries,
      std::vector<std::unique_ptr<Reservation>> reserved,
      const std::function<std::string(size_t)>& name, const PersistAll& persist);
  // INVALID_ARGUMENT naming the first entry whose problem class or family
  // (as filled in) differs from the first entry's: a group's members share
  // them (CreateGroup makes them so; ImportGroup must check).
  static absl::Status CheckSameProblem(const std::vector<std::shared_ptr<Entry>>& entries,
                                       const std::function<std::string(size_t)>& name);
  // `s` with its message prefixed by "<name>: ".
  static absl::Status Named(const std::string& name, const absl::Status& s);
  // Import's checks and the entry it builds (not installed); `reserved`
  // receives its memory reservation.
  absl::StatusOr<std::shared_ptr<Entry>> PrepareImport(const v1::ImportSessionRequest& request,
                                                       std::unique_ptr<Reservation>& reserved);
  // PrepareImport's second half, shared with ImportChunks: the session
  // restored from `state` and checked with the spec and reply cache of
  // `ex` (its state field is not read), as entry `id` holding
  // `reserved_bytes`.  A spec naming no algorithm gets the state's, not
  // the class default (`config` is rebuilt with it).
  absl::StatusOr<std::shared_ptr<Entry>> BuildImported(const std::string& id,
                                                       const v1::SessionExport& ex,
                                                       const SessionConfig& config,
                                                       Checkpoint state, int64_t reserved_bytes);
  absl::Status CheckLimits(const v1::Batch& batch, const std::string& what) const;
  // The metrics channel of `entry` for its session of `generation`,
  // starting with `history` (earlier steps' messages, up to the session's
  // last step applied).
  std::shared_ptr<SessionMetrics> OpenMetrics(const std::shared_ptr<Entry>& entry,
                                              std::unique_ptr<MetricsEvaluator> evaluator,
                                              uint64_t generation,
                                              std::vector<v1::StepMetrics> history = {});
  // Checkpoints (session_checkpoints.cc).  All require e.mu.
  bool CheckpointDue(int64_t step) const;
  // Records checkpoint `next_t` (its bytes are kept only without a store)
  // and forgets all but the newest max_checkpoints.
  void KeepCheckpoint(Entry& e, int64_t next_t, std::string bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The bytes of checkpoint `next_t`, from the store or from memory.
  absl::StatusOr<std::string> CheckpointBytes(const Entry& e, int64_t next_t) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The state after step `t` as encoded bytes, for a rollback or a fork
  // (`what`): the current state when t is the last step applied, else its
  // checkpoint; FAILED_PRECONDITION naming the nearest checkpoints.
  absl::StatusOr<std::string> StateAfter(const Entry& e, int64_t t, const char* what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // The same decoded, for a fork: the current state copied (its parts
  // shared copy-on-write, nothing encoded), or the checkpoint decoded part
  // by part (SessionStore::LoadCheckpointState).
  absl::StatusOr<Checkpoint> CheckpointAfter(const Entry& e, int64_t t, const char* what) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // StateAfter's refusal of a t that is neither current nor a checkpoint.
  static absl::Status NoCheckpointAt(const Entry& e, int64_t t, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  absl::StatusOr<v1::StepReply> Apply(Entry& e, int64_t t,
                                      const std::shared_ptr<const StepData>& data,
                                      const grpc::ServerContext* call,
                                      const std::function<void(const Session&)>& applied = nullptr);
  // A step's round, run and not yet stored: its pending state is in
  // e->session (Apply, ApplyAll).
  struct PreparedStep {
    Entry* e = nullptr;
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
  // Runs e's round of step t (e at t, not removed, its fence checked;
  // requires e.mu).  On error nothing changed.
  absl::StatusOr<PreparedStep> PrepareStep(Entry& e, int64_t t, const StepData& data,
                                           const grpc::ServerContext* call)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // What the store writes for a prepared step (StepStateOf with its
  // checkpoint), keyed by its next step index.
  StepState StoredStateOf(PreparedStep& p) const;  // requires p.e->mu (asserted)
  // The checkpoint in parts of state `s` of e: the parts changed since
  // e.checkpoint_base (those of e.changed_since_checkpoint and `step`), or
  // every non-empty part when `step` is null or there is no base.  Its head
  // is left empty.
  static CheckpointParts CheckpointPartsOf(const Entry& e, const SessionState& s,
                                           const std::vector<int64_t>* step)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // After the store took p's write: what the next checkpoint extends.
  static void NoteStored(Entry& e, const PreparedStep& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // Makes a stored prepared step current, published, cached and sent to
  // the metrics pipeline; returns its reply (requires e.mu).
  v1::StepReply CommitPrepared(PreparedStep& p, const std::shared_ptr<const StepData>& data);
  static v1::SessionInfo Info(const Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  // A view of e's current state (requires e.mu and e.sums_mu); Publish
  // (requires e.mu) makes it the one readers see; PublishSums (requires
  // e.sums_mu) replaces only the running sums of the published view.
  static std::shared_ptr<const View> CurrentView(const Entry& e)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu, e.sums_mu);
  static void Publish(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  static void PublishSums(Entry& e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.sums_mu);
  // The checkpoint encoding of `state` with e's running sums (requires e.mu).
  static std::string Encode(const Entry& e, const SessionState& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);
  static std::shared_ptr<const View> ViewOf(const Entry& e);
  static v1::SessionInfo InfoOf(const std::string& id, int exact_every, const View& view);
  // For t != next_t: the cached reply of t (marked replayed) or
  // FAILED_PRECONDITION naming the expected index.  Requires e.mu.
  static absl::StatusOr<v1::StepReply> CachedOrRefused(const Entry& e, int64_t t)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(e.mu);

  const Limits limits_;
  RoundStopFlags round_stops_;
  MetricsPipeline* const pipeline_;
  SessionStore* const store_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> sessions_ ABSL_GUARDED_BY(mu_);
  // Ids reserved by installs in progress: not findable yet, but taken (and
  // counted toward max_sessions).  Waiters Await their leaving.
  std::set<std::string> installing_ ABSL_GUARDED_BY(mu_);
  // Fenced routing key -> new owner ("" if its record was damaged).
  mutable absl::Mutex fence_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<std::string, std::string> fences_ ABSL_GUARDED_BY(fence_mu_);
  uint64_t next_generated_id_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t reserved_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_MANAGER_H_
