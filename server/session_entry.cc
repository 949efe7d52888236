// A session's entry: its checks, and the views it publishes after every
// change, from which GetSession, ListSessions and GetDecision answer
// without the session's lock, so no read waits for a round.
#include "server/session_entry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/convert.h"

namespace f2obo::server {

absl::Status SessionEntry::CheckNotRemoved() const {
  if (!removed) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("session '", id, "' was deleted"));
}

absl::StatusOr<v1::StepReply> SessionEntry::CachedOrRefused(int64_t t) const {
  for (const v1::StepReply& r : replies) {
    if (r.t() == t) {
      v1::StepReply copy = r;
      copy.set_replayed(true);
      return copy;
    }
  }
  const int64_t next = session->state().t;
  return absl::FailedPreconditionError(
      absl::StrCat("step index t = ", t, " refused: session '", id, "' expects t = ", next,
                   t < next ? " (that step was applied and is no longer in the reply cache)" : ""));
}

std::shared_ptr<const SessionView> SessionEntry::CurrentView() const {
  auto out = std::make_shared<SessionView>();
  out->session = session;
  out->state = session->snapshot();
  out->metrics = session->metrics();
  out->checkpoints.reserve(checkpoints.size());
  for (int64_t next_t : checkpoints) out->checkpoints.push_back(next_t - 1);
  return out;
}

v1::SessionInfo SessionEntry::InfoOf(const SessionView& v) const {
  v1::SessionInfo info = SessionInfoOf(id, *v.session, *v.state, v.metrics, exact_every);
  for (int64_t t : v.checkpoints) info.add_checkpoints(t);
  return info;
}

v1::SessionInfo SessionEntry::Info() const {
  std::shared_ptr<const SessionView> current;
  {
    absl::MutexLock sums(&sums_mu);
    current = CurrentView();
  }
  return InfoOf(*current);
}

void SessionEntry::Publish() {
  // Under sums_mu throughout, so that sums added meanwhile are not lost
  // from the view (PublishSums waits, then adds them to this one).
  absl::MutexLock sums(&sums_mu);
  std::shared_ptr<const SessionView> current = CurrentView();
  absl::MutexLock lock(&view_mu);
  view = std::move(current);
}

void SessionEntry::PublishSums() {
  absl::MutexLock lock(&view_mu);
  if (view == nullptr) return;  // not published yet: its install will
  auto next = std::make_shared<SessionView>(*view);
  next->metrics = session->metrics();
  view = std::move(next);
}

std::shared_ptr<const SessionView> SessionEntry::PublishedView() const {
  absl::MutexLock lock(&view_mu);
  return view;
}

std::string SessionEntry::Encode(const SessionState& state) const {
  absl::MutexLock sums(&sums_mu);
  return session->Encode(state);
}

std::shared_ptr<SessionMetrics> SessionEntry::OpenMetrics(
    const std::shared_ptr<SessionEntry>& entry, MetricsPipeline* pipeline,
    std::unique_ptr<MetricsEvaluator> evaluator, uint64_t generation,
    std::vector<v1::StepMetrics> history) {
  std::weak_ptr<SessionEntry> weak = entry;
  const int64_t start_t = entry->session->state().t - 1;  // its last step applied
  return pipeline->Open(
      entry->id, std::move(evaluator),
      [weak, generation](const ClassMetrics* m, double probability) {
        RunningMetrics out;
        if (std::shared_ptr<SessionEntry> e = weak.lock()) {
          absl::MutexLock lock(&e->sums_mu);
          if (e->generation == generation) {
            if (m != nullptr) {
              e->session->AddMetrics(*m, probability);
            } else {
              e->session->AddSkipped();
            }
            e->PublishSums();
          }
          out = e->session->metrics();
        }
        return out;
      },
      start_t, std::move(history));
}

}  // namespace f2obo::server
