// The session table's readers: each answers from a session's published
// view (SessionEntry::Publish, after every change), without the session's
// lock, so no read waits for a round.
#include <memory>
#include <string>
#include <vector>

#include "f2obo/v1/convert.h"
#include "server/session_table.h"

namespace f2obo::server {

absl::StatusOr<v1::SessionInfo> SessionTable::Get(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = Find(id);
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
  return out;
}

absl::StatusOr<v1::Decision> SessionTable::GetDecision(const std::string& id) const {
  absl::StatusOr<std::shared_ptr<SessionEntry>> e = Find(id);
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
