// Scale-out fences (the proto's SetFence): a fenced routing key's sessions
// are being moved to another replica, so this one refuses to change them.
// The fence is durable before it takes effect here, and SetFence returns
// only after every round and install admitted before it has finished: from
// then on this replica's copies are frozen, and the new owner's import is
// the only copy that can accept steps.
#include "absl/strings/str_cat.h"
#include "server/ids.h"
#include "server/session_table.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

std::string SessionTable::RoutingKey(const std::string& id) { return id.substr(0, id.find('.')); }

absl::Status SessionTable::CheckFence(const std::string& id) const {
  const std::string key = RoutingKey(id);
  absl::MutexLock lock(&fence_mu_);
  const auto it = fences_.find(key);
  if (it == fences_.end()) return absl::OkStatus();
  // UNAVAILABLE, not FAILED_PRECONDITION: the call is right, only sent too
  // early; clients retry it (same step index) until the proxy routes the
  // key to its new owner.
  return absl::UnavailableError(
      absl::StrCat("session '", id, "' is moving to replica '",
                   it->second.empty() ? "<unknown: damaged fence record>" : it->second,
                   "' (routing key '", key, "' is fenced on this replica); retry"));
}

absl::Status SessionTable::SetFence(const std::string& key, const std::string& target) {
  if (key.empty() || key.find('.') != std::string::npos || !IsSessionId(key)) {
    return absl::InvalidArgumentError("routing_key: must match [A-Za-z0-9_-]{1,64}");
  }
  if (target.empty()) return absl::InvalidArgumentError("target: must name the new owner");
  if (store_ != nullptr) {
    if (absl::Status s = store_->PutFence(key, target); !s.ok()) {
      return StoreWriteFailed(s, absl::StrCat("routing key '", key, "' not fenced"));
    }
  }
  std::vector<std::shared_ptr<SessionEntry>> fenced;
  {
    absl::MutexLock lock(&mu_);
    {
      absl::MutexLock fence(&fence_mu_);
      fences_[key] = target;
    }
    // Installs that reserved an id of the key before the fence finish
    // first (they are then listed and moved with the rest).
    const auto settled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const std::string& id : installing_) {
        if (RoutingKey(id) == key) return false;
      }
      return true;
    };
    mu_.Await(absl::Condition(&settled));
    for (const auto& [id, e] : sessions_) {
      if (RoutingKey(id) == key) fenced.push_back(e);
    }
  }
  // A round holds its entry's mu from before its fence check to its commit:
  // taking each lock once waits for the rounds admitted before the fence.
  for (const auto& e : fenced) absl::MutexLock barrier(&e->mu);
  return absl::OkStatus();
}

absl::Status SessionTable::LiftFence(const std::string& key) {
  {
    absl::MutexLock lock(&fence_mu_);
    if (fences_.count(key) == 0) {
      return absl::NotFoundError(absl::StrCat("routing key '", key, "' has no fence"));
    }
  }
  if (store_ != nullptr) {
    if (absl::Status s = store_->PutFence(key, ""); !s.ok()) {
      return StoreWriteFailed(s, absl::StrCat("fence of routing key '", key, "' not lifted"));
    }
  }
  absl::MutexLock lock(&fence_mu_);
  fences_.erase(key);
  return absl::OkStatus();
}

void SessionTable::LoadFences(const std::vector<StoredFence>& fences) {
  absl::MutexLock lock(&fence_mu_);
  for (const StoredFence& f : fences) fences_[f.key] = f.target;
}

std::vector<StoredFence> SessionTable::Fences() const {
  absl::MutexLock lock(&fence_mu_);
  std::vector<StoredFence> out;
  for (const auto& [key, target] : fences_) out.push_back({key, target});
  return out;
}

std::vector<std::string> SessionTable::SessionsOfKey(const std::string& key) const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [id, e] : sessions_) {
    if (RoutingKey(id) == key) out.push_back(id);
  }
  return out;
}

}  // namespace f2obo::server
