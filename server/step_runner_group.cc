// A group step, all members or none: every member's round is prepared,
// then their states are stored in one transaction, then all become
// current.  Applied member by member, a round one member refused (or a
// store write that failed for it) would leave the others a step ahead, and
// the group could not step again.
#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "server/fault_points.h"
#include "server/step_runner.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> StepRunner::ApplyAll(
    const std::string& group_id, const std::vector<std::string>& ids, int64_t t,
    const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call) {
  const auto failed = [&](const std::string& id, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("session '", id, "': ", s.message(), "; step ", t,
                                               " applied to no member"));
  };
  std::vector<std::shared_ptr<SessionEntry>> entries;
  for (const std::string& id : ids) {
    absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->Find(id);
    if (!found.ok()) return failed(id, found.status());
    entries.push_back(*std::move(found));
  }
  // A shared store: a member found stale makes every member reloaded and
  // the step tried again on them (step_runner.h).
  for (int attempt = 0;; ++attempt) {
    bool stale = false;
    auto out = AttemptAll(group_id, entries, t, data, call, attempt > 0, &stale);
    if (!stale) return out;
    if (attempt == kReloads) {
      return absl::UnavailableError(absl::StrCat("group '", group_id,
                                                 "': the stored members moved on at every reload "
                                                 "(other servers write them); step ",
                                                 t, " applied to no member; retry"));
    }
    for (std::shared_ptr<SessionEntry>& e : entries) {
      absl::StatusOr<std::shared_ptr<SessionEntry>> reloaded = Reload(e);
      if (!reloaded.ok()) return failed(e->id, reloaded.status());
      e = *std::move(reloaded);
    }
  }
}

absl::StatusOr<std::vector<absl::StatusOr<v1::StepReply>>> StepRunner::AttemptAll(
    const std::string& group_id, const std::vector<std::shared_ptr<SessionEntry>>& entries,
    int64_t t, const std::shared_ptr<const StepData>& data, const grpc::ServerContext* call,
    bool fresh, bool* stale) {
  const auto failed = [&](const std::string& id, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat("session '", id, "': ", s.message(), "; step ", t,
                                               " applied to no member"));
  };
  // Every member's lock for the whole step, taken in id order (the only
  // place that holds several: no other order can meet it), so that no
  // other writer of a member interleaves between the rounds and the commit.
  std::vector<size_t> order(entries.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return entries[a]->id < entries[b]->id; });
  std::vector<std::unique_ptr<absl::MutexLock>> locks;
  for (size_t i : order) locks.push_back(std::make_unique<absl::MutexLock>(&entries[i]->mu));

  std::vector<absl::StatusOr<v1::StepReply>> out(entries.size(), absl::UnknownError("not stepped"));
  std::vector<size_t> due;  // the members at t
  for (size_t i = 0; i < entries.size(); ++i) {
    SessionEntry& e = *entries[i];
    e.mu.AssertHeld();  // locked above (a set the analysis cannot follow)
    if (absl::Status s = e.CheckNotRemoved(); !s.ok()) return failed(e.id, s);
    if (e.dropped || (shared() && !fresh && t != e.session->state().t)) {
      *stale = true;  // may be behind the store: reloaded first
      return absl::AbortedError("stale copy");
    }
    if (t != e.session->state().t) {
      out[i] = e.CachedOrRefused(t);
      continue;
    }
    if (absl::Status fenced = table_->CheckFence(e.id); !fenced.ok()) return failed(e.id, fenced);
    due.push_back(i);
  }
  std::vector<PreparedStep> prepared;
  const auto abort_all = [&] {
    for (PreparedStep& p : prepared) p.e->session->Abort();
  };
  for (size_t i : due) {
    SessionEntry& e = *entries[i];
    e.mu.AssertHeld();
    absl::StatusOr<PreparedStep> p = PrepareStep(e, t, *data, call);
    if (p.ok()) prepared.push_back(*std::move(p));
    absl::Status s = p.ok() ? FaultPoint("group_step_prepared", e.id) : p.status();
    if (!s.ok()) {
      abort_all();
      return failed(e.id, s);
    }
  }
  if (absl::Status s = FaultPoint("group_step_before_commit", group_id); !s.ok()) {
    abort_all();
    return absl::Status(s.code(), absl::StrCat(s.message(), "; step ", t, " applied to no member"));
  }
  if (store_ != nullptr && !prepared.empty()) {
    std::vector<SessionStore::SessionStep> steps;
    for (PreparedStep& p : prepared) {
      steps.push_back(
          {p.e->id, t + 1, StoredStateOf(p), p.reply, p.checkpoint ? limits_.max_checkpoints : 0});
    }
    absl::Status durable = store_->CommitSteps(
        std::move(steps), limits_.reply_cache,
        call != nullptr ? call->deadline() : std::chrono::system_clock::time_point::max());
    if (!durable.ok()) {
      for (PreparedStep& p : prepared) {
        p.e->mu.AssertHeld();
        if (p.checkpoint) p.e->checkpoint_base = 0;  // the next starts a chain
      }
      abort_all();
      if (shared() && (absl::IsAborted(durable) || absl::IsNotFound(durable))) {
        *stale = true;  // a member moved on in the store: nothing written
        return durable;
      }
      const std::string what = absl::StrCat("group '", group_id, "': step ", t,
                                            " applied to no member (their states unchanged)");
      if (absl::IsDeadlineExceeded(durable)) {  // withdrawn from the store's queue
        return absl::DeadlineExceededError(absl::StrCat(what, ": ", durable.message()));
      }
      return StoreWriteFailed(durable, what);
    }
    for (PreparedStep& p : prepared) {
      p.e->mu.AssertHeld();
      p.e->store_in_parts = true;
      NoteStored(*p.e, p);
    }
  }
  // Durable already: a fault here is a crash test's (the step survives it).
  FaultPoint("group_step_after_commit", group_id).IgnoreError();
  for (size_t k = 0; k < prepared.size(); ++k) out[due[k]] = CommitPrepared(prepared[k], data);
  return out;
}

}  // namespace f2obo::server
