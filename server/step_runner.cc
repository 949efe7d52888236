// The step path (step_runner.h): a step's batches checked against the
// limits and decoded, the reply cache asked first, the round prepared on a
// copy of the state, its changed parts (and a due checkpoint's) written to
// the store, and the result committed.
#include "server/step_runner.h"

#include "absl/strings/str_cat.h"
#include "f2obo/v1/convert.h"
#include "server/fault_points.h"
#include "server/hyperparameters.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::Status StepRunner::CheckLimits(const v1::Batch& b, const std::string& what) const {
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

absl::StatusOr<std::shared_ptr<const StepData>> StepRunner::Decode(
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

absl::StatusOr<v1::StepReply> StepRunner::Step(const v1::StepRequest& req,
                                               const grpc::ServerContext* call) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(req.session_id());
  if (!found.ok()) return found.status();
  if (absl::Status s = FaultPoint("step_after_find", req.session_id()); !s.ok()) return s;
  std::shared_ptr<SessionEntry> e = *std::move(found);
  for (int attempt = 0;; ++attempt) {
    {
      // A retry of an applied step is answered from the cache before any
      // decoding, so it costs nothing and cannot fail differently.  A
      // shared store's copy at another index than t may be stale: it is
      // answered from once reloaded.
      absl::MutexLock lock(&e->mu);
      if (absl::Status s = e->CheckNotRemoved(); !s.ok()) return s;
      const bool expected = req.t() == e->session->state().t;
      if (!e->dropped && expected) break;
      if (!shared() || (attempt > 0 && !e->dropped)) return e->CachedOrRefused(req.t());
      if (attempt == kReloads) break;  // Apply tells
    }
    absl::StatusOr<std::shared_ptr<SessionEntry>> reloaded = Reload(e);
    if (!reloaded.ok()) return reloaded.status();
    e = *std::move(reloaded);
  }
  absl::StatusOr<std::shared_ptr<const StepData>> data =
      Decode(req.upper(), req.inner(), req.tasks());
  if (!data.ok()) return data.status();
  return Apply(std::move(e), req.t(), *data, call);
}

absl::StatusOr<std::shared_ptr<SessionEntry>> StepRunner::Reload(
    const std::shared_ptr<SessionEntry>& e) {
  table_->Drop(e);
  conflicts_resolved_.fetch_add(1, std::memory_order_relaxed);
  return table_->Find(e->id);
}

absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> StepRunner::SessionStop(
    const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(id);
  if (!found.ok()) return found.status();
  return std::shared_ptr<const std::atomic<bool>>(*found, &(*found)->stop_rounds);
}

absl::StatusOr<v1::StepReply> StepRunner::ApplyDecoded(
    const std::string& id, int64_t t, const std::shared_ptr<const StepData>& data,
    const grpc::ServerContext* call, const std::function<void(const Session&)>& applied) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(id);
  if (!found.ok()) return found.status();
  return Apply(*std::move(found), t, data, call, applied);
}

absl::Status StepRunner::ValidateBatches(const std::string& id, const StepData& data) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(id);
  if (!found.ok()) return found.status();
  absl::MutexLock lock(&(*found)->mu);
  if (absl::Status s = (*found)->CheckNotRemoved(); !s.ok()) return s;
  return (*found)->session->problem().ValidateData(data);
}

absl::StatusOr<v1::StepReply> StepRunner::Apply(
    std::shared_ptr<SessionEntry> e, int64_t t, const std::shared_ptr<const StepData>& data,
    const grpc::ServerContext* call, const std::function<void(const Session&)>& applied) {
  for (int attempt = 0;; ++attempt) {
    bool stale = false;
    absl::StatusOr<v1::StepReply> r = Attempt(*e, t, data, call, applied, attempt > 0, &stale);
    if (!stale) return r;
    if (attempt == kReloads) {
      return absl::UnavailableError(absl::StrCat(
          "step ", t, " of session '", e->id,
          "': the stored session moved on at every reload (other servers write it); not "
          "applied here (session state unchanged); retry"));
    }
    absl::StatusOr<std::shared_ptr<SessionEntry>> reloaded = Reload(e);
    if (!reloaded.ok()) return reloaded.status();
    e = *std::move(reloaded);
  }
}

absl::StatusOr<v1::StepReply> StepRunner::Attempt(
    SessionEntry& e, int64_t t, const std::shared_ptr<const StepData>& data,
    const grpc::ServerContext* call, const std::function<void(const Session&)>& applied, bool fresh,
    bool* stale) {
  absl::MutexLock lock(&e.mu);
  // Deleted while this request decoded (or waited for the lock): nothing
  // may be applied or written for it any more.
  if (absl::Status removed = e.CheckNotRemoved(); !removed.ok()) return removed;
  // A copy let go of (stale) is not written from: the session is found again.
  if (e.dropped) {
    *stale = true;
    return absl::AbortedError("stale copy");
  }
  // Another request for this index may have won the race while we decoded
  // (with a shared store, maybe on another server: reloaded first).
  if (t != e.session->state().t) {
    if (shared() && !fresh) {
      *stale = true;
      return absl::AbortedError("stale copy");
    }
    return e.CachedOrRefused(t);
  }
  // Checked under e.mu: SetFence waits for this lock, so no step is
  // applied after a fence's SetFence returned.
  if (absl::Status fenced = table_->CheckFence(e.id); !fenced.ok()) return fenced;
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
    // The stored session moved on (another server stepped, rolled back or
    // deleted it): nothing written; answered from it, reloaded.
    if (shared() && (absl::IsAborted(durable) || absl::IsNotFound(durable))) {
      e.session->Abort();
      *stale = true;
      return durable;
    }
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

absl::StatusOr<StepRunner::PreparedStep> StepRunner::PrepareStep(SessionEntry& e, int64_t t,
                                                                 const StepData& data,
                                                                 const grpc::ServerContext* call) {
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
  if (e.shown_x_groups == nullptr) {
    e.shown_x_groups = std::make_shared<const std::vector<SessionConfig::XGroup>>(
        ShownXGroups(s.config(), p.reply.x_size()));
  }
  if (!e.shown_x_groups->empty()) {  // (the worker names and averages them)
    p.job.x_groups = e.shown_x_groups;
    p.job.x.assign(p.reply.x().begin(), p.reply.x().end());
  }
  ToProto(*report, p.reply.mutable_report());
  if (std::optional<v1::ExactMetrics> latest = e.metrics->LatestExact()) {
    *p.reply.mutable_latest_exact() = *std::move(latest);
  }
  p.checkpoint = checkpoints_->Due(t);
  // (With a store the checkpoint is written in parts: StoredStateOf.)
  if (p.checkpoint && store_ == nullptr) p.encoded = e.Encode(s.pending_state());
  p.job.report = *std::move(report);
  return p;
}

StepState StepRunner::StoredStateOf(PreparedStep& p) const {
  // Without a store the checkpoint's bytes are kept in memory
  // (CommitPrepared); with one it is written in parts with the step: its
  // head is the step's, its parts those changed since the last checkpoint.
  const SessionEntry& e = *p.e;
  e.mu.AssertHeld();  // the round's caller holds it from PrepareStep on
  StepState out = StepStateOf(e, store_, std::string());
  p.complete = out.complete;
  p.changed.clear();
  for (const auto& row : out.aux_rows) p.changed.push_back(row.first);
  if (p.checkpoint) {
    out.checkpoint_in_parts = true;
    out.checkpoint =
        Checkpoints::PartsOf(e, e.session->pending_state(), out.complete ? nullptr : &p.changed);
  }
  return out;
}

void StepRunner::NoteStored(SessionEntry& e, const PreparedStep& p) {
  Checkpoints::NoteStepStored(e, p.t + 1, p.checkpoint, p.complete, p.changed);
}

v1::StepReply StepRunner::CommitPrepared(PreparedStep& p,
                                         const std::shared_ptr<const StepData>& data) {
  SessionEntry& e = *p.e;
  e.mu.AssertHeld();  // the round's caller holds it from PrepareStep on
  e.session->Commit();
  if (p.checkpoint) checkpoints_->Keep(e, p.t + 1, std::move(p.encoded));  // unused with a store
  e.Publish();
  e.replies.push_back(p.reply);
  while (static_cast<int>(e.replies.size()) > limits_.reply_cache) e.replies.pop_front();
  p.job.data = data;
  p.job.exact_due = e.exact_every > 0 && p.t % e.exact_every == 0;
  pipeline_->Enqueue(e.metrics, std::move(p.job));
  return std::move(p.reply);  // (the cache holds the one copy)
}

StepState StepRunner::StepStateOf(const SessionEntry& e, const SessionStore* store,
                                  std::string full) {
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

}  // namespace f2obo::server
