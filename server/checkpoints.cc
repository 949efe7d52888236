// Checkpoints, rollback, and the state a fork starts from (undo a poisoned
// stretch of data; branch a live session into a challenger: Installs::Fork).
//
// Choices:
//  * A rollback or fork restores a kept checkpoint exactly, or the current
//    state.  Replaying from an earlier checkpoint would need the batches of
//    the steps in between, which the server does not keep (a step's data
//    is used once and dropped); so the checkpoints are the only states
//    that can be reached, and SessionInfo.checkpoints lists them.
//  * Checkpoints are labelled by the last step applied (t = next_t - 1, 0
//    for a new session), as RollbackSession's to_t is; internally and in
//    the store they are keyed by the state's next step index.
//  * A checkpoint after step t is written in the transaction of step t
//    itself (SessionStore::CommitStep), so it costs no fsync of its own and
//    is exactly as durable as the step.  Without a store they are kept in
//    memory, counted in the session's reserved memory.
//  * A rollback replaces the session object (Session::Restore, which checks
//    the state as any restored one) and its metrics channel, which starts
//    with the old one's messages of the steps kept (a fork's: with its
//    source's up to the fork point); the old
//    channel's watchers end (ABORTED, see the service), and a metrics job of
//    an abandoned step still in the pipeline does not add to the restored
//    running sums (SessionEntry::generation).  Later checkpoints are dropped: they
//    belong to the abandoned branch, whose step indices will be reused.
//  * A fork of the current state starts from that state as it is (a copy
//    whose aux parts are shared copy-on-write with its source: nothing is
//    encoded or decoded), a fork at a checkpoint from the checkpoint
//    decoded part by part; either is then stored in parts like any new
//    session (Installs::RecordOf).  At 1,000,000 tasks an encode and a decode of
//    the whole state cost ~3 s and ~2 GB.
//  * A fork with another algorithm takes the state as that algorithm's own
//    when Session::Restore accepts it under the new config (same class,
//    the class's checks, the algorithm-owned vectors of its layout or none);
//    the writer's name in the checkpoint, which guards imports against a
//    silent change of algorithm, is replaced because this change is asked.
#include "server/checkpoints.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "f2obo/v1/convert.h"
#include "server/step_runner.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

bool Checkpoints::Due(int64_t step) const {
  return limits_.max_checkpoints > 0 && limits_.checkpoint_every > 0 &&
         step % limits_.checkpoint_every == 0;
}

void Checkpoints::Keep(SessionEntry& e, int64_t next_t, std::string bytes) const {
  e.checkpoints.insert(next_t);
  if (store_ == nullptr) e.memory_checkpoints[next_t] = std::move(bytes);
  while (static_cast<int>(e.checkpoints.size()) > std::max(limits_.max_checkpoints, 1)) {
    e.memory_checkpoints.erase(*e.checkpoints.begin());
    e.checkpoints.erase(e.checkpoints.begin());
  }
}

CheckpointParts Checkpoints::PartsOf(const SessionEntry& e, const SessionState& s,
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

void Checkpoints::NoteStepStored(SessionEntry& e, int64_t next_t, bool checkpoint, bool complete,
                                 const std::vector<int64_t>& changed) {
  if (checkpoint) {
    e.checkpoint_base = next_t;
    e.changed_since_checkpoint.clear();
  } else if (complete) {
    // Every part rewritten (after a failed write, the store's checkpoints
    // may lack one this process counted on): the next starts a chain.
    e.checkpoint_base = 0;
    e.changed_since_checkpoint.clear();
  } else if (e.checkpoint_base > 0) {
    e.changed_since_checkpoint.insert(changed.begin(), changed.end());
  }
}

absl::StatusOr<std::string> Checkpoints::Bytes(const SessionEntry& e, int64_t next_t) const {
  if (store_ != nullptr) return store_->LoadCheckpoint(e.id, next_t);
  const auto it = e.memory_checkpoints.find(next_t);
  if (it == e.memory_checkpoints.end()) {
    return absl::InternalError(absl::StrCat("checkpoint t = ", next_t - 1, " of session '", e.id,
                                            "' is listed but not held"));
  }
  return it->second;
}

absl::StatusOr<std::string> Checkpoints::StateAfter(const SessionEntry& e, int64_t t,
                                                    const char* what) const {
  const int64_t next = e.session->state().t;
  if (t >= next) return NoCheckpointAt(e, t, what);
  if (t == next - 1) return e.Encode(e.session->state());
  if (e.checkpoints.count(t + 1) > 0) return Bytes(e, t + 1);
  return NoCheckpointAt(e, t, what);
}

absl::StatusOr<Checkpoint> Checkpoints::After(const SessionEntry& e, int64_t t,
                                              const char* what) const {
  const int64_t next = e.session->state().t;
  if (t == next - 1) {
    // What Encode would write, without encoding it: a copy of the state
    // (x and the class's vectors copied; the aux parts shared, copy-on-
    // write, so a fork of 1,000,000 tasks copies none of them).
    const Session& s = *e.session;
    Checkpoint c;
    c.family = s.config().family.name;
    c.algorithm = s.config().algorithm;
    c.state = s.state();
    absl::MutexLock sums(&e.sums_mu);
    c.metrics = s.metrics();
    return c;
  }
  if (t >= next || e.checkpoints.count(t + 1) == 0) return NoCheckpointAt(e, t, what);
  if (store_ != nullptr) return store_->LoadCheckpointState(e.id, t + 1);
  absl::StatusOr<std::string> bytes = Bytes(e, t + 1);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Checkpoint> decoded = DeserializeCheckpoint(*bytes);
  if (!decoded.ok()) {
    return absl::DataLossError(absl::StrCat("checkpoint t = ", t, " of session '", e.id,
                                            "': ", decoded.status().message()));
  }
  return decoded;
}

absl::Status Checkpoints::NoCheckpointAt(const SessionEntry& e, int64_t t, const char* what) {
  const int64_t next = e.session->state().t;
  if (t >= next) {
    return absl::FailedPreconditionError(absl::StrCat(what, " t = ", t, " refused: session '", e.id,
                                                      "' has applied steps up to t = ", next - 1,
                                                      " (it expects t = ", next, ")"));
  }
  // The nearest kept checkpoints on either side, and every one kept.
  std::vector<int64_t> kept;
  for (int64_t c : e.checkpoints) kept.push_back(c - 1);
  const auto after = std::upper_bound(kept.begin(), kept.end(), t);
  std::string nearest;
  if (after != kept.begin()) absl::StrAppend(&nearest, "t = ", *(after - 1), " before it");
  if (after != kept.end()) {
    absl::StrAppend(&nearest, nearest.empty() ? "" : " and ", "t = ", *after, " after it");
  }
  return absl::FailedPreconditionError(absl::StrCat(
      what, " t = ", t, " refused: session '", e.id,
      "' has no checkpoint there (only a kept checkpoint or the current state, t = ", next - 1,
      ", can be restored: the steps' data is not kept to replay); nearest: ",
      nearest.empty() ? "none" : nearest,
      "; kept: ", kept.empty() ? "none" : absl::StrJoin(kept, ", ")));
}

template <typename Once>
absl::StatusOr<v1::SessionInfo> Checkpoints::OnStored(const std::string& id, const Once& once) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(id);
  if (!found.ok()) return found.status();
  std::shared_ptr<SessionEntry> e = *std::move(found);
  for (int attempt = 0;; ++attempt) {
    bool stale = false;
    absl::StatusOr<v1::SessionInfo> info = once(e, attempt > 0, &stale);
    if (!stale) return info;
    if (attempt == StepRunner::kReloads) {
      return absl::UnavailableError(
          absl::StrCat("session '", id,
                       "': the stored session moved on at every reload (other servers write "
                       "it); nothing changed; retry"));
    }
    table_->Drop(e);
    conflicts_resolved_.fetch_add(1, std::memory_order_relaxed);
    found = table_->Find(id);
    if (!found.ok()) return found.status();
    e = *std::move(found);
  }
}

absl::StatusOr<v1::SessionInfo> Checkpoints::Take(const std::string& id) {
  return OnStored(id, [&](const std::shared_ptr<SessionEntry>& e, bool, bool* stale) {
    return TakeOn(e, stale);
  });
}

absl::StatusOr<v1::SessionInfo> Checkpoints::Rollback(const std::string& id, int64_t to_t,
                                                      bool* rolled_back) {
  if (to_t < 0) {
    return absl::InvalidArgumentError(absl::StrCat("to_t: ", to_t, " is not a step (>= 0)"));
  }
  return OnStored(id, [&](const std::shared_ptr<SessionEntry>& e, bool fresh, bool* stale) {
    return RollbackOn(e, to_t, rolled_back, fresh, stale);
  });
}

absl::StatusOr<v1::SessionInfo> Checkpoints::TakeOn(const std::shared_ptr<SessionEntry>& found,
                                                    bool* stale) {
  SessionEntry& e = *found;
  const std::string& id = e.id;
  absl::MutexLock lock(&e.mu);
  if (absl::Status s = e.CheckNotRemoved(); !s.ok()) return s;
  if (e.dropped) {
    *stale = true;
    return absl::AbortedError("stale copy");
  }
  if (limits_.max_checkpoints <= 0) {
    return absl::FailedPreconditionError(
        "checkpoints are off on this server (--max_checkpoints=0)");
  }
  const int64_t next = e.session->state().t;
  if (e.checkpoints.count(next) > 0) return e.Info();
  std::string bytes;
  if (store_ != nullptr) {
    // In parts: those changed since the last checkpoint (checkpoints.cc).
    static const std::vector<int64_t> kNoStep;
    CheckpointParts parts = PartsOf(e, e.session->state(), &kNoStep);
    {
      absl::MutexLock sums(&e.sums_mu);
      parts.head = e.session->EncodeHead(e.session->state());
    }
    absl::Status s = store_->PutCheckpoint(id, next, std::move(parts), limits_.max_checkpoints);
    if (!s.ok()) {
      e.checkpoint_base = 0;  // the next starts a chain of its own
      if (shared() && (absl::IsAborted(s) || absl::IsNotFound(s))) {
        *stale = true;  // another server moved the session on: taken on the truth
        return s;
      }
      return StoreWriteFailed(
          s, absl::StrCat("checkpoint t = ", next - 1, " of session '", id, "' not taken"));
    }
    e.checkpoint_base = next;
    e.changed_since_checkpoint.clear();
  } else {
    bytes = e.Encode(e.session->state());
  }
  Keep(e, next, std::move(bytes));  // bytes unused with a store
  e.Publish();
  return e.Info();
}

absl::StatusOr<v1::SessionInfo> Checkpoints::RollbackOn(const std::shared_ptr<SessionEntry>& found,
                                                        int64_t to_t, bool* rolled_back, bool fresh,
                                                        bool* stale) {
  SessionEntry& e = *found;
  const std::string& id = e.id;
  std::shared_ptr<SessionMetrics> abandoned;
  v1::SessionInfo info;
  {
    absl::MutexLock lock(&e.mu);
    if (absl::Status s = e.CheckNotRemoved(); !s.ok()) return s;
    // A copy let go of, or one a shared store may have moved past: the
    // rollback is decided on the session as stored.
    if (e.dropped || (shared() && !fresh && to_t + 1 == e.session->state().t)) {
      *stale = true;
      return absl::AbortedError("stale copy");
    }
    if (absl::Status s = table_->CheckFence(id); !s.ok()) return s;  // its state is being moved
    if (to_t + 1 == e.session->state().t) return e.Info();           // already there
    absl::StatusOr<std::string> bytes = StateAfter(e, to_t, "rollback to");
    if (!bytes.ok()) return bytes.status();
    absl::StatusOr<Checkpoint> checkpoint = DeserializeCheckpoint(*bytes);
    absl::StatusOr<std::unique_ptr<Session>> session =
        checkpoint.ok() ? Session::Restore(e.session->config(), *std::move(checkpoint))
                        : checkpoint.status();
    if (!session.ok()) {
      return absl::DataLossError(
          absl::StrCat("checkpoint t = ", to_t, " of session '", id,
                       "' cannot be restored: ", session.status().message()));
    }
    absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
        (*session)->problem().NewMetricsEvaluator();
    if (!evaluator.ok()) return evaluator.status();
    std::deque<v1::StepReply> replies;
    for (const v1::StepReply& r : e.replies) {
      if (r.t() <= to_t) replies.push_back(r);
    }
    if (store_ != nullptr) {
      // Compare-and-set from the copy's step index.
      absl::Status s = store_->RollbackSession(
          id, to_t + 1, *std::move(bytes), {replies.begin(), replies.end()}, e.session->state().t);
      if (shared() && (absl::IsAborted(s) || absl::IsNotFound(s))) {
        *stale = true;  // another server moved the session on: rolled back on the truth
        return s;
      }
      if (!s.ok()) {
        return StoreWriteFailed(s, absl::StrCat("session '", id, "' not rolled back"));
      }
    }
    // Durable: now the session in memory follows.
    {
      absl::MutexLock sums(&e.sums_mu);
      e.session = *std::move(session);
      e.store_in_parts = false;  // the store has the whole state
      e.checkpoint_base = 0;     // and the next checkpoint starts a chain
      e.changed_since_checkpoint.clear();
      ++e.generation;
    }
    e.replies = std::move(replies);
    while (!e.checkpoints.empty() && *e.checkpoints.rbegin() > to_t + 1) {
      e.memory_checkpoints.erase(*e.checkpoints.rbegin());
      e.checkpoints.erase(std::prev(e.checkpoints.end()));
    }
    // The new channel keeps the messages of the steps not undone (the
    // dashboard's history and `f2obo-cli metrics` continue from them).
    std::vector<v1::StepMetrics> kept;
    for (v1::StepMetrics& m : e.metrics->Snapshot(0)) {
      if (m.t() <= to_t) kept.push_back(std::move(m));
    }
    std::shared_ptr<SessionMetrics> channel = SessionEntry::OpenMetrics(
        found, pipeline_, *std::move(evaluator), e.generation, std::move(kept));
    {
      absl::MutexLock metrics_lock(&e.metrics_mu);
      abandoned = std::exchange(e.metrics, std::move(channel));
    }
    e.Publish();
    info = e.Info();
  }
  abandoned->Close();
  if (rolled_back != nullptr) *rolled_back = true;
  return info;
}

}  // namespace f2obo::server
