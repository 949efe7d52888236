// SessionManager's readers and the views they read (session_manager.h):
// each session publishes an immutable view of its last committed step
// after every change, and GetSession, ListSessions and GetDecision answer
// from it without the session's lock, so no read waits for a round.
#include <memory>
#include <string>
#include <vector>

#include "f2obo/v1/convert.h"
#include "server/session_manager.h"

namespace f2obo::server {

std::shared_ptr<const SessionManager::View> SessionManager::CurrentView(const Entry& e) {
  auto view = std::make_shared<View>();
  view->session = e.session;
  view->state = e.session->snapshot();
  view->metrics = e.session->metrics();
  view->checkpoints.reserve(e.checkpoints.size());
  for (int64_t next_t : e.checkpoints) view->checkpoints.push_back(next_t - 1);
  return view;
}

v1::SessionInfo SessionManager::InfoOf(const std::string& id, int exact_every, const View& view) {
  v1::SessionInfo info = SessionInfoOf(id, *view.session, *view.state, view.metrics, exact_every);
  for (int64_t t : view.checkpoints) info.add_checkpoints(t);
  return info;
}

v1::SessionInfo SessionManager::Info(const Entry& e) {
  std::shared_ptr<const View> view;
  {
    absl::MutexLock sums(&e.sums_mu);
    view = CurrentView(e);
  }
  return InfoOf(e.id, e.exact_every, *view);
}

void SessionManager::Publish(Entry& e) {
  // Under sums_mu throughout, so that sums added meanwhile are not lost
  // from the view (PublishSums waits, then adds them to this one).
  absl::MutexLock sums(&e.sums_mu);
  std::shared_ptr<const View> view = CurrentView(e);
  absl::MutexLock lock(&e.view_mu);
  e.view = std::move(view);
}

void SessionManager::PublishSums(Entry& e) {
  absl::MutexLock lock(&e.view_mu);
  if (e.view == nullptr) return;  // not published yet: Install will
  auto view = std::make_shared<View>(*e.view);
  view->metrics = e.session->metrics();
  e.view = std::move(view);
}

std::string SessionManager::Encode(const Entry& e, const SessionState& state) {
  absl::MutexLock sums(&e.sums_mu);
  return e.session->Encode(state);
}

std::shared_ptr<const SessionManager::View> SessionManager::ViewOf(const Entry& e) {
  absl::MutexLock lock(&e.view_mu);
  return e.view;
}

absl::StatusOr<v1::SessionInfo> SessionManager::Get(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<Entry>> e = Find(id);
  if (!e.ok()) return e.status();
  return InfoOf(id, (*e)->exact_every, *ViewOf(**e));
}

std::vector<v1::SessionInfo> SessionManager::List() const {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, e] : sessions_) entries.push_back(e);
  }
  std::vector<v1::SessionInfo> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back(InfoOf(e->id, e->exact_every, *ViewOf(*e)));
  return out;
}

absl::StatusOr<v1::Decision> SessionManager::GetDecision(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<Entry>> e = Find(id);
  if (!e.ok()) return e.status();
  const std::shared_ptr<const View> view = ViewOf(**e);
  return DecisionOf(id, *view->session, *view->state);
}

}  // namespace f2obo::server
