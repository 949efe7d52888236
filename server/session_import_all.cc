// Several sessions imported as a unit (ImportGroup: a group moving between
// replicas).  Unlike a loop over Import, nothing is durable or findable
// until every member is: a crash or an error part-way leaves none of them,
// so no member can exist on its own, accept steps, and then be replaced by
// a rerun of the move (which would lose the steps it took).
#include "absl/strings/str_cat.h"
#include "server/session_manager.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::StatusOr<std::vector<v1::SessionInfo>> SessionManager::ImportAll(
    const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
    const std::function<absl::Status(const std::vector<SessionRecord>&)>& persist) {
  const auto named = [&](size_t i, const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(field, "[", i, "]: ", s.message()));
  };
  std::vector<std::unique_ptr<Reservation>> reserved(requests.size());
  std::vector<std::shared_ptr<Entry>> entries;
  std::vector<std::unique_ptr<MetricsEvaluator>> evaluators;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareImport(requests[i], reserved[i]);
    if (!entry.ok()) return named(i, entry.status());
    absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
        (*entry)->session->problem().NewMetricsEvaluator();
    if (!evaluator.ok()) return named(i, evaluator.status());
    entries.push_back(*std::move(entry));
    evaluators.push_back(*std::move(evaluator));
  }
  size_t claimed = 0;
  const auto unclaim = [&] {
    for (size_t i = 0; i < claimed; ++i) Unclaim(entries[i]->id);
  };
  for (; claimed < entries.size(); ++claimed) {
    if (absl::Status s = Claim(*entries[claimed], /*generate_id=*/false, /*check_fence=*/true);
        !s.ok()) {
      unclaim();
      return named(claimed, s);
    }
  }
  // Where an imported session starts is its first checkpoint, as Install.
  const bool checkpoint = limits_.max_checkpoints > 0;
  std::vector<SessionRecord> records;
  if (store_ != nullptr) {
    for (const auto& e : entries) records.push_back(RecordOf(*e, checkpoint));
  }
  if (absl::Status s = persist(records); !s.ok()) {
    unclaim();
    return s;
  }
  std::vector<v1::SessionInfo> infos;
  for (size_t i = 0; i < entries.size(); ++i) {
    infos.push_back(PublishClaimed(std::move(entries[i]), std::move(evaluators[i]), checkpoint));
    reserved[i]->Keep();
  }
  return infos;
}

}  // namespace f2obo::server
