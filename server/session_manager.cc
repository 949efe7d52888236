#include "server/session_manager.h"

#include "absl/strings/str_cat.h"
#include "core/problem_registry.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/number_checks.h"
#include "server/fault_points.h"
#include "server/session_footprint.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

// Exact metrics cost more than a round: the client's policy, else the
// problem class's default.  One rule for every way a session comes to be
// (create, import, recovery), so that an imported session without the
// field does not silently lose its metrics.
int SessionManager::ExactEvery(const v1::SessionSpec& spec, const Session& session) {
  if (!session.problem().HasExactMetrics()) return 0;
  if (spec.metrics().has_exact_every()) return spec.metrics().exact_every();
  return session.problem().DefaultExactEvery();
}

SessionManager::SessionManager(Limits limits, MetricsPipeline* pipeline, SessionStore* store)
    : limits_(limits), pipeline_(pipeline), store_(store) {}

absl::StatusOr<std::shared_ptr<SessionManager::Entry>> SessionManager::Find(
    const std::string& id) const {
  absl::MutexLock lock(&mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    // Moved away (a fence left as a tombstone): a proxy with the old ring
    // still sends it here; the client is to retry, not to give up.
    if (absl::Status fenced = CheckFence(id); !fenced.ok()) return fenced;
    return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  }
  return it->second;
}

absl::Status SessionManager::CheckNotRemoved(const Entry& e) {
  if (!e.removed) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("session '", e.id, "' was deleted"));
}

absl::StatusOr<SessionConfig> SessionManager::CheckedConfig(const v1::SessionSpec& spec) const {
  // Every number of the spec is an input number (the proto's conventions),
  // checked before any of it is converted or allocated.
  if (absl::Status s = CheckSpecNumbers(spec, "spec"); !s.ok()) return s;
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec);
  if (!config.ok()) return config.status();
  // Bound the state before anything is allocated: an upper estimate of y
  // plus x (quadratic's x_dim), in 64 bits, a negative dimension counting as
  // 0 (the families refuse those), so that no field can hide another.
  const FamilyConfig& f = config->family;
  const auto dim = [](int v) { return static_cast<int64_t>(std::max(v, 0)); };
  // A multi-task session may come to hold a y per task (tasks are checked
  // against max_tasks first, so the product stays far inside int64).
  const int64_t per_task =
      (dim(f.features) + 1) * std::max<int64_t>(dim(f.classes), 1) + dim(f.y_dim) + dim(f.x_dim);
  const int64_t y_bound =
      f.tasks > 0 && f.tasks <= limits_.max_tasks ? per_task * f.tasks : per_task;
  if (f.tasks > limits_.max_tasks) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.family.tasks: m = ", f.tasks,
                     " exceeds the server limit max_tasks = ", limits_.max_tasks));
  }
  if (y_bound > limits_.max_y_dim) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.family: a session of about ", y_bound,
                     " state variables (x and y) exceeds the per-session limit max_y_dim = ",
                     limits_.max_y_dim));
  }
  // Only the caps the algorithm reads: an option it ignores keeps its
  // generic default, which may exceed the server's limit (an export
  // carries only the options its algorithm reads).
  const AlgorithmOptions& o = config->options;
  const AlgorithmInfo* info = FindAlgorithm(config->algorithm);
  const auto reads = [&](Opt opt) { return info == nullptr || info->reads.Has(opt); };
  // (sf2obo's schedule cap is used by its theory schedule only.)
  const auto unused = [&](Opt id) {
    return id == Opt::max_scheduled_inner_steps && o.inner_schedule != InnerSchedule::kTheory;
  };
  for (Opt id : IterationOptions()) {
    const OptionInfo& opt = GetOptionInfo(id);
    if (!reads(id) || unused(id) || opt.get(o) <= limits_.max_inner_iterations) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "options.", opt.name, " = ", opt.get(o), ": above the server limit max_inner_iterations = ",
        limits_.max_inner_iterations, " (it caps every option counting iterations)"));
  }
  if (spec.metrics().has_exact_every() && spec.metrics().exact_every() < 0) {
    return absl::InvalidArgumentError("spec.metrics.exact_every: must be >= 0");
  }
  return config;
}

absl::StatusOr<int64_t> SessionManager::Reserve(const SessionConfig& config,
                                                const v1::SessionSpec& spec, bool enforce_limits) {
  const SessionFootprint f = EstimateFootprint(config.family);
  if (store_ != nullptr && enforce_limits) {
    const int64_t max_record = store_->max_record_bytes();
    if (f.record_bytes > max_record) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec.family: the session's state (x of about ", f.x,
                       " entries, y and z of ", f.y, " each) would take about ", f.record_bytes,
                       " bytes in the store, beyond its maximum record size of ", max_record,
                       " bytes (SQLite's SQLITE_MAX_LENGTH)"));
    }
    if (static_cast<int64_t>(spec.ByteSizeLong()) > max_record) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec: ", spec.ByteSizeLong(),
                       " bytes, beyond the store's maximum record size of ", max_record, " bytes"));
    }
  }
  // Without a store, a session's checkpoints are kept in memory.
  const int64_t memory = static_cast<int64_t>(std::min(
      9.0e18, static_cast<double>(f.memory_bytes) +
                  (store_ == nullptr ? static_cast<double>(std::max(limits_.max_checkpoints, 0)) *
                                           static_cast<double>(f.record_bytes)
                                     : 0.0)));
  absl::MutexLock lock(&mu_);
  if (enforce_limits && limits_.max_total_state_bytes > 0 &&
      memory > limits_.max_total_state_bytes - reserved_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "spec.family: a session of about ", memory, " bytes of memory (x of about ", f.x,
        " entries, y and z of ", f.y, " each, with the copies a round and a commit make",
        store_ == nullptr ? " and its in-memory checkpoints" : "",
        ") does not fit the memory limit max_total_state_bytes = ", limits_.max_total_state_bytes,
        " (sessions hold ", reserved_bytes_, ")"));
  }
  reserved_bytes_ += memory;
  return memory;
}

void SessionManager::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_bytes_ -= bytes;
}

int64_t SessionManager::reserved_bytes() const {
  absl::MutexLock lock(&mu_);
  return reserved_bytes_;
}

std::shared_ptr<SessionMetrics> SessionManager::OpenMetrics(
    const std::shared_ptr<Entry>& entry, std::unique_ptr<MetricsEvaluator> evaluator,
    uint64_t generation, std::vector<v1::StepMetrics> history) {
  // The worker's accumulator adds to the session's running sums under
  // sums_mu, never waiting for a round (which holds mu), unless a rollback
  // replaced the session since (a later generation).
  std::weak_ptr<Entry> weak = entry;
  const int64_t start_t = entry->session->state().t - 1;  // its last step applied
  return pipeline_->Open(
      entry->id, std::move(evaluator),
      [weak, generation](const ClassMetrics* m, double probability) {
        RunningMetrics out;
        if (std::shared_ptr<Entry> e = weak.lock()) {
          absl::MutexLock lock(&e->sums_mu);
          if (e->generation == generation) {
            if (m != nullptr) {
              e->session->AddMetrics(*m, probability);
            } else {
              e->session->AddSkipped();
            }
            PublishSums(*e);
          }
          out = e->session->metrics();
        }
        return out;
      },
      start_t, std::move(history));
}

absl::StatusOr<v1::SessionInfo> SessionManager::Create(const v1::CreateSessionRequest& req,
                                                       Deadline deadline) {
  std::unique_ptr<Reservation> reserved;
  absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareCreate(req, reserved);
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), req.session_id().empty(), /*persisted=*/false, deadline);
  if (info.ok()) reserved->Keep();
  return info;
}

absl::StatusOr<std::vector<std::string>> SessionManager::Recover(std::vector<StoredGroup>* groups) {
  if (store_ == nullptr) return std::vector<std::string>{};
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  if (!loaded.ok()) return loaded.status();
  if (groups != nullptr) *groups = std::move(loaded->groups);
  {
    absl::MutexLock lock(&fence_mu_);
    for (const StoredFence& f : loaded->fences) fences_[f.key] = f.target;
  }
  std::vector<std::string> problems = loaded->damaged;
  for (StoredSession& stored : loaded->sessions) {
    absl::StatusOr<SessionConfig> config = ToSessionConfig(stored.spec);
    absl::StatusOr<std::unique_ptr<Session>> session =
        config.ok() ? Session::Restore(*config, std::move(stored.state)) : config.status();
    if (!session.ok()) {
      problems.push_back(absl::StrCat("session '", stored.id, "': ", session.status().message()));
      continue;
    }
    auto entry = std::make_shared<Entry>();
    entry->id = stored.id;
    entry->exact_every = ExactEvery(stored.spec, **session);
    entry->session = *std::move(session);
    {
      absl::MutexLock lock(&entry->mu);  // not shared yet: for the analysis' sake
      for (v1::StepReply& r : stored.replies) entry->replies.push_back(std::move(r));
      entry->checkpoints.insert(stored.checkpoints.begin(), stored.checkpoints.end());
    }
    // Stored sessions load whatever the limits (they exist already); they
    // count against the budget for new ones.
    Reservation reserved(this, *Reserve(*config, stored.spec, /*enforce_limits=*/false));
    entry->reserved_bytes = reserved.bytes();
    absl::StatusOr<v1::SessionInfo> info =
        Install(std::move(entry), /*generate_id=*/false, /*persisted=*/true);
    if (!info.ok()) {
      problems.push_back(absl::StrCat("session '", stored.id, "': ", info.status().message()));
    } else {
      reserved.Keep();
    }
  }
  return problems;
}

absl::Status SessionManager::Delete(const std::string& id, bool from_store, Deadline deadline) {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(id);
  if (!found.ok()) return found.status();
  Entry& e = **found;
  std::shared_ptr<SessionMetrics> metrics;
  {
    // Serialize with the session's steps; gone from disk before from
    // memory, and marked removed before its lock is released, so that a
    // step that found the entry earlier neither applies nor persists
    // (which would bring the session back at the next restart).
    // `from_store` = false: the caller (a group delete) already removed it
    // from the store in its own transaction.  A round running meanwhile
    // is stopped first (and may run again if the delete fails).
    e.stop_rounds.store(true);
    absl::MutexLock entry_lock(&e.mu);
    if (e.removed) {  // a concurrent Delete won
      return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
    }
    if (store_ != nullptr && from_store) {
      if (absl::Status s = store_->DeleteSession(id, deadline); !s.ok()) {
        e.stop_rounds.store(false);
        if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
          return absl::DeadlineExceededError(
              absl::StrCat("session '", id, "': ", s.message(), "; not deleted"));
        }
        return StoreWriteFailed(s, absl::StrCat("session '", id, "' not deleted"));
      }
    }
    {
      absl::MutexLock lock(&mu_);
      const auto it = sessions_.find(id);
      if (it != sessions_.end() && it->second == *found) sessions_.erase(it);
    }
    e.removed = true;
    metrics = e.metrics;
  }
  Release(e.reserved_bytes);
  metrics->Close();
  return absl::OkStatus();
}

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

absl::Status SessionManager::CheckLimits(const v1::Batch& b, const std::string& what) const {
  int64_t rows = 0, cols = 0, nnz = 0;
  if (b.has_dense()) {
    rows = b.dense().rows();
    cols = b.dense().cols();
    nnz = b.dense().values_size();
  } else if (b.has_csr()) {
    rows = b.csr().rows();
    cols = b.csr().cols();
    nnz = b.csr().values_size();
  }
  if (rows > limits_.max_batch_rows) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", rows, " rows exceed max_batch_rows = ", limits_.max_batch_rows));
  }
  if (cols > limits_.max_batch_cols) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": ", cols, " columns exceed max_batch_cols = ", limits_.max_batch_cols));
  }
  if (nnz > limits_.max_batch_nnz) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", nnz, " values exceed max_batch_nnz = ", limits_.max_batch_nnz));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::StepReply> SessionManager::CachedOrRefused(const Entry& e, int64_t t) {
  for (const v1::StepReply& r : e.replies) {
    if (r.t() == t) {
      v1::StepReply copy = r;
      copy.set_replayed(true);
      return copy;
    }
  }
  const int64_t next = e.session->state().t;
  return absl::FailedPreconditionError(
      absl::StrCat("step index t = ", t, " refused: session '", e.id, "' expects t = ", next,
                   t < next ? " (that step was applied and is no longer in the reply cache)" : ""));
}

absl::StatusOr<std::shared_ptr<const StepData>> SessionManager::Decode(
    const v1::Batch& upper, const v1::Batch& inner,
    const google::protobuf::RepeatedPtrField<v1::TaskBatch>& tasks) const {
  if (absl::Status s = CheckLimits(upper, "upper"); !s.ok()) return s;
  if (absl::Status s = CheckLimits(inner, "inner"); !s.ok()) return s;
  // A multi-task step: every task's batches under the same limits, all
  // checked before anything is converted.
  if (tasks.size() > limits_.max_tasks) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "tasks: ", tasks.size(), " tasks in one step exceed max_tasks = ", limits_.max_tasks));
  }
  for (int k = 0; k < tasks.size(); ++k) {
    const std::string what = absl::StrCat("tasks[", k, "]");
    if (absl::Status s = CheckLimits(tasks[k].upper(), what + ".upper"); !s.ok()) return s;
    if (absl::Status s = CheckLimits(tasks[k].inner(), what + ".inner"); !s.ok()) return s;
  }
  auto data = std::make_shared<StepData>();
  absl::StatusOr<Batch> u = ToBatch(upper, "upper");
  if (!u.ok()) return u.status();
  absl::StatusOr<Batch> i = ToBatch(inner, "inner");
  if (!i.ok()) return i.status();
  data->upper = *std::move(u);
  data->inner = *std::move(i);
  data->tasks.reserve(tasks.size());
  for (int k = 0; k < tasks.size(); ++k) {
    absl::StatusOr<TaskData> task = ToTask(tasks[k], absl::StrCat("tasks[", k, "]"));
    if (!task.ok()) return task.status();
    data->tasks.push_back(*std::move(task));
  }
  return std::shared_ptr<const StepData>(std::move(data));
}

absl::StatusOr<v1::StepReply> SessionManager::Step(const v1::StepRequest& req,
                                                   const grpc::ServerContext* call) {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(req.session_id());
  if (!found.ok()) return found.status();
  if (absl::Status s = FaultPoint("step_after_find", req.session_id()); !s.ok()) return s;
  {
    // A retry of an applied step is answered from the cache before any
    // decoding, so it costs nothing and cannot fail differently.
    absl::MutexLock lock(&(*found)->mu);
    if (absl::Status s = CheckNotRemoved(**found); !s.ok()) return s;
    if (req.t() != (*found)->session->state().t) return CachedOrRefused(**found, req.t());
  }
  absl::StatusOr<std::shared_ptr<const StepData>> data =
      Decode(req.upper(), req.inner(), req.tasks());
  if (!data.ok()) return data.status();
  return Apply(**found, req.t(), *data, call);
}

absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> SessionManager::SessionStop(
    const std::string& id) const {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(id);
  if (!found.ok()) return found.status();
  return std::shared_ptr<const std::atomic<bool>>(*found, &(*found)->stop_rounds);
}

absl::StatusOr<v1::StepReply> SessionManager::ApplyDecoded(
    const std::string& id, int64_t t, const std::shared_ptr<const StepData>& data,
    const grpc::ServerContext* call, const std::function<void(const Session&)>& applied) {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(id);
  if (!found.ok()) return found.status();
  return Apply(**found, t, data, call, applied);
}

absl::Status SessionManager::ValidateBatches(const std::string& id, const StepData& data) const {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(id);
  if (!found.ok()) return found.status();
  absl::MutexLock lock(&(*found)->mu);
  if (absl::Status s = CheckNotRemoved(**found); !s.ok()) return s;
  return (*found)->session->problem().ValidateData(data);
}

absl::StatusOr<v1::StepReply> SessionManager::Apply(
    Entry& e, int64_t t, const std::shared_ptr<const StepData>& data,
    const grpc::ServerContext* call, const std::function<void(const Session&)>& applied) {
  absl::MutexLock lock(&e.mu);
  // Deleted while this request decoded (or waited for the lock): nothing
  // may be applied or written for it any more.
  if (absl::Status removed = CheckNotRemoved(e); !removed.ok()) return removed;
  // Another request for this index may have won the race while we decoded.
  if (t != e.session->state().t) return CachedOrRefused(e, t);
  // Checked under e.mu: SetFence waits for this lock, so no step is
  // applied after a fence's SetFence returned.
  if (absl::Status fenced = CheckFence(e.id); !fenced.ok()) return fenced;
  absl::StatusOr<PreparedStep> p = PrepareStep(e, t, *data, call);
  if (!p.ok()) return p.status();
  // Acknowledged only once durable: the new state becomes current after
  // the store has it (group-committed with other sessions' steps), with its
  // checkpoint when one is due.
  if (store_ != nullptr) {
    absl::Status durable = store_->CommitStep(
        e.id, t + 1, StoredStateOf(*p), p->reply, limits_.reply_cache,
        p->checkpoint ? limits_.max_checkpoints : 0,
        call != nullptr ? call->deadline() : std::chrono::system_clock::time_point::max());
    // A checkpoint not written: the next one starts a chain of its own.
    if (!durable.ok() && p->checkpoint) e.checkpoint_base = 0;
    if (absl::IsDeadlineExceeded(durable)) {  // withdrawn from the store's queue
      e.session->Abort();
      return absl::DeadlineExceededError(absl::StrCat("step ", t, ": ", durable.message(),
                                                      "; not applied (session state unchanged)"));
    }
    if (!durable.ok()) {
      e.session->Abort();
      return StoreWriteFailed(durable,
                              absl::StrCat("step ", t, " not applied (session state unchanged)"));
    }
    e.store_in_parts = true;
    NoteStored(e, *p);
  }
  v1::StepReply reply = CommitPrepared(*p, data);
  if (applied != nullptr) applied(*e.session);
  return reply;
}

absl::StatusOr<SessionManager::PreparedStep> SessionManager::PrepareStep(
    Entry& e, int64_t t, const StepData& data, const grpc::ServerContext* call) {
  Session& s = *e.session;
  PreparedStep p;
  p.e = &e;
  p.t = t;
  p.job.t = t;
  p.job.before = s.snapshot();
  CallRoundControl control(call, &round_stops_, limits_.round_budget_seconds);
  control.set_session_stop(&e.stop_rounds);
  absl::StatusOr<StepReport> report = s.Prepare(data, &control);
  if (!report.ok()) return report.status();
  // A round that finished after its client gave up is not applied either.
  if (absl::Status stop = control.CheckNow(); !stop.ok()) {
    s.Abort();
    return absl::Status(stop.code(), absl::StrCat("step ", t, ": ", stop.message(),
                                                  "; not applied (session state unchanged)"));
  }
  p.reply.set_session_id(e.id);
  p.reply.set_t(t);
  ToRepeated(s.problem().Decision(s.pending_state()), p.reply.mutable_x());
  ToProto(*report, p.reply.mutable_report());
  if (std::optional<v1::ExactMetrics> latest = e.metrics->LatestExact()) {
    *p.reply.mutable_latest_exact() = *std::move(latest);
  }
  p.checkpoint = CheckpointDue(t);
  // (With a store the checkpoint is written in parts: StoredStateOf.)
  if (p.checkpoint && store_ == nullptr) p.encoded = Encode(e, s.pending_state());
  p.job.report = *std::move(report);
  return p;
}

StepState SessionManager::StoredStateOf(PreparedStep& p) const {
  // Without a store the checkpoint's bytes are kept in memory
  // (CommitPrepared); with one it is written in parts with the step: its
  // head is the step's, its parts those changed since the last checkpoint.
  const Entry& e = *p.e;
  e.mu.AssertHeld();  // the round's caller holds it from PrepareStep on
  StepState out = StepStateOf(e, store_, std::string());
  p.complete = out.complete;
  p.changed.clear();
  for (const auto& row : out.aux_rows) p.changed.push_back(row.first);
  if (p.checkpoint) {
    out.checkpoint_in_parts = true;
    out.checkpoint =
        CheckpointPartsOf(e, e.session->pending_state(), out.complete ? nullptr : &p.changed);
  }
  return out;
}

CheckpointParts SessionManager::CheckpointPartsOf(const Entry& e, const SessionState& s,
                                                  const std::vector<int64_t>* step) {
  CheckpointParts c;
  c.count = static_cast<int64_t>(s.aux.size());
  c.base = step == nullptr ? 0 : e.checkpoint_base;
  if (c.base == 0) {
    for (size_t i = 0; i < s.aux.size(); ++i) {
      if (s.aux[i].size() > 0)
        c.rows.emplace_back(static_cast<int64_t>(i), EncodeAuxPart(s.aux[i]));
    }
    return c;
  }
  std::set<int64_t> changed = e.changed_since_checkpoint;
  changed.insert(step->begin(), step->end());
  for (int64_t i : changed) {
    // (A part that became empty is written empty: it must not resolve to
    // an older row.)
    if (i < c.count) c.rows.emplace_back(i, EncodeAuxPart(s.aux[static_cast<size_t>(i)]));
  }
  return c;
}

void SessionManager::NoteStored(Entry& e, const PreparedStep& p) {
  if (p.checkpoint) {
    e.checkpoint_base = p.t + 1;
    e.changed_since_checkpoint.clear();
  } else if (p.complete) {
    // Every part rewritten (after a failed write, the store's checkpoints
    // may lack one this process counted on): the next starts a chain.
    e.checkpoint_base = 0;
    e.changed_since_checkpoint.clear();
  } else if (e.checkpoint_base > 0) {
    e.changed_since_checkpoint.insert(p.changed.begin(), p.changed.end());
  }
}

v1::StepReply SessionManager::CommitPrepared(PreparedStep& p,
                                             const std::shared_ptr<const StepData>& data) {
  Entry& e = *p.e;
  e.mu.AssertHeld();  // the round's caller holds it from PrepareStep on
  e.session->Commit();
  if (p.checkpoint) KeepCheckpoint(e, p.t + 1, std::move(p.encoded));  // bytes unused with a store
  Publish(e);
  e.replies.push_back(p.reply);
  while (static_cast<int>(e.replies.size()) > limits_.reply_cache) e.replies.pop_front();
  p.job.data = data;
  p.job.exact_due = e.exact_every > 0 && p.t % e.exact_every == 0;
  pipeline_->Enqueue(e.metrics, std::move(p.job));
  return p.reply;
}

StepState SessionManager::StepStateOf(const Entry& e, const SessionStore* store, std::string full) {
  const Session& s = *e.session;
  const SessionState& next = s.pending_state();
  StepState out;
  {
    absl::MutexLock sums(&e.sums_mu);  // the running sums in the head
    out.head = s.EncodeHead(next);
  }
  out.aux_count = static_cast<int64_t>(next.aux.size());
  out.full = std::move(full);
  out.trim = !e.store_in_parts || next.aux.size() < s.state().aux.size();
  const auto add = [&](size_t i) {
    out.aux_rows.emplace_back(static_cast<int64_t>(i), EncodeAuxPart(next.aux[i]));
  };
  out.complete = !e.store_in_parts || store->NeedsCompleteState(e.id);
  if (out.complete) out.trim = true;
  if (!out.complete) {
    // The parts the round wrote (copy-on-write: the others are the very
    // objects of the committed state, which the store already holds).
    next.aux.ForEachChanged(s.state().aux, add);
  } else {
    for (size_t i = 0; i < next.aux.size(); ++i) {
      if (next.aux[i].size() > 0) add(i);
    }
  }
  return out;
}

absl::StatusOr<std::shared_ptr<SessionMetrics>> SessionManager::Metrics(
    const std::string& id) const {
  absl::StatusOr<std::shared_ptr<Entry>> e = Find(id);
  if (!e.ok()) return e.status();
  absl::MutexLock lock(&(*e)->metrics_mu);
  return (*e)->metrics;
}

}  // namespace f2obo::server
