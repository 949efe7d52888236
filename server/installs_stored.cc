// The sessions a store holds (installs.h): all of them at start (Recover)
// for the embedded store, or one at a time when first asked for
// (LoadStored) for a store shared by several servers.
#include <utility>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/wire_upgrade.h"
#include "server/install_checks.h"
#include "server/installs.h"

namespace f2obo::server {

absl::StatusOr<std::vector<std::string>> Installs::Recover(std::vector<StoredGroup>* groups) {
  if (store_ == nullptr) return std::vector<std::string>{};
  // A shared store may hold more sessions than this server's memory: each
  // is loaded on demand (SessionTable::Find), so only groups and fences are
  // read here.
  absl::StatusOr<LoadedStore> loaded =
      store_->shared() ? store_->LoadGroupsAndFences() : store_->LoadAll();
  if (!loaded.ok()) return loaded.status();
  if (groups != nullptr) *groups = std::move(loaded->groups);
  table_->LoadFences(loaded->fences);
  std::vector<std::string> problems = loaded->damaged;
  for (StoredSession& stored : loaded->sessions) {
    if (absl::Status s = InstallStored(stored); !s.ok()) {
      problems.push_back(absl::StrCat("session '", stored.id, "': ", s.message()));
    }
  }
  return problems;
}

absl::StatusOr<std::shared_ptr<SessionEntry>> Installs::BuildStored(StoredSession& stored) {
  // Stored by a server (older ones wrote every option): unread options
  // never acted, and are dropped (convert.h).
  absl::StatusOr<SessionConfig> config = ToSessionConfig(stored.spec, UnreadOptions::kDrop);
  absl::StatusOr<std::unique_ptr<Session>> session =
      config.ok() ? Session::Restore(*config, std::move(stored.state)) : config.status();
  if (!session.ok()) return session.status();
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
      (*session)->problem().NewMetricsEvaluator();
  if (!evaluator.ok()) return evaluator.status();
  auto entry = std::make_shared<SessionEntry>();
  entry->id = stored.id;
  entry->exact_every = ExactEvery(stored.spec, **session);
  entry->session = *std::move(session);
  {
    absl::MutexLock lock(&entry->mu);  // not shared yet: for the analysis' sake
    for (v1::StepReply& r : stored.replies) {
      // Rows an older server wrote hold the layout before problem_class.
      v1::UpgradeStepReply(&r);
      entry->replies.push_back(std::move(r));
    }
    // A store written with a longer --reply_cache: the newest
    // reply_cache answer retries from now on, as after a step (the
    // store's rows are trimmed at the session's next step).
    while (static_cast<int>(entry->replies.size()) > limits_.reply_cache) {
      entry->replies.pop_front();
    }
    entry->checkpoints.insert(stored.checkpoints.begin(), stored.checkpoints.end());
  }
  // Stored sessions load whatever the limits (they exist already); they
  // count against the budget for new ones.
  Reservation reserved(table_, *table_->Reserve(*config, stored.spec, /*enforce_limits=*/false));
  entry->reserved_bytes = reserved.bytes();
  Ready(entry, *std::move(evaluator), /*checkpoint=*/false, /*stored=*/false);
  reserved.Keep();
  return entry;
}

absl::Status Installs::InstallStored(StoredSession& stored) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> entry = BuildStored(stored);
  if (!entry.ok()) return entry.status();
  if (absl::Status s = table_->Claim(**entry, /*generate_id=*/false, /*check_fence=*/false);
      !s.ok()) {
    table_->Release((*entry)->reserved_bytes);
    absl::MutexLock metrics_lock(&(*entry)->metrics_mu);
    (*entry)->metrics->Close();
    return s;
  }
  table_->Publish(*std::move(entry));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<SessionEntry>> Installs::LoadStored(const std::string& id) {
  absl::StatusOr<StoredSession> stored = store_->LoadSession(id);
  if (!stored.ok()) return stored.status();
  absl::StatusOr<std::shared_ptr<SessionEntry>> entry = BuildStored(*stored);
  if (!entry.ok()) {
    // Stored but not restorable here: as recovery reports such a session.
    return absl::DataLossError(
        absl::StrCat("session '", id, "' cannot be loaded: ", entry.status().message()));
  }
  return entry;
}

}  // namespace f2obo::server
