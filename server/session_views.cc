// The session table's readers: each answers from a session's published
// view (SessionEntry::Publish, after every change), without the session's
// lock, so no read waits for a round.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "f2obo/v1/convert.h"
#include "server/session_table.h"

namespace f2obo::server {

absl::StatusOr<v1::SessionInfo> SessionTable::Get(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = FindFresh(id);
  // The store cannot be asked whether the copy held is current (it is
  // down): reads of the sessions in memory keep working, from the last
  // state this server committed or loaded, as List answers.
  if (absl::IsUnavailable(e.status())) e = Find(id);
  if (!e.ok()) return e.status();
  return (*e)->InfoOf(*(*e)->PublishedView());
}

std::vector<v1::SessionInfo> SessionTable::List() const {
  std::vector<std::shared_ptr<SessionEntry>> entries;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, e] : sessions_) entries.push_back(e);
  }
  std::vector<v1::SessionInfo> out;
  out.reserve(entries.size());
  for (const auto& e : entries) out.push_back(e->InfoOf(*e->PublishedView()));
  if (loader_ == nullptr) return out;
  // A shared store: also the sessions this server does not hold (another
  // server's, or evicted), as the store summarizes them: id, spec and next
  // step index.  If the store cannot be read, the ones held.
  absl::StatusOr<std::vector<SessionSummary>> stored = store_->ListSessions();
  if (!stored.ok()) return out;
  std::set<std::string> held;
  for (const v1::SessionInfo& info : out) held.insert(info.session_id());
  for (SessionSummary& s : *stored) {
    if (held.count(s.id) > 0) continue;
    v1::SessionInfo info;
    info.set_session_id(s.id);
    *info.mutable_spec() = std::move(s.spec);
    info.set_next_t(s.t);
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(), [](const v1::SessionInfo& a, const v1::SessionInfo& b) {
    return a.session_id() < b.session_id();
  });
  return out;
}

absl::StatusOr<v1::Decision> SessionTable::GetDecision(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = FindFresh(id);
  if (absl::IsUnavailable(e.status())) e = Find(id);  // as Get: the copy held
  if (!e.ok()) return e.status();
  const std::shared_ptr<const SessionView> view = (*e)->PublishedView();
  return DecisionOf(id, *view->session, *view->state);
}

absl::StatusOr<std::shared_ptr<SessionMetrics>> SessionTable::Metrics(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = Find(id);
  if (!e.ok()) return e.status();
  absl::MutexLock lock(&(*e)->metrics_mu);
  return (*e)->metrics;
}

}  // namespace f2obo::server
