#include "server/store/sync_gather.h"

#include <algorithm>

namespace f2obo::server::store_detail {

SyncGather::Plan SyncGather::Next() const {
  Plan p;
  if (skip_ > 0) return p;
  const auto expected = [&](const std::string& id) {
    const auto it = seen_.find(id);
    return it != seen_.end() && it->second.fast;
  };
  for (const std::string& id : last_) p.want += expected(id) ? 1 : 0;
  for (const std::string& id : before_) {
    if (!std::binary_search(last_.begin(), last_.end(), id)) p.want += expected(id) ? 1 : 0;
  }
  p.until = last_done_ + kMaxWait;
  return p;
}

void SyncGather::Committed(const std::vector<std::pair<std::string, absl::Time>>& writes,
                           absl::Time done, const Plan& plan, int queued, int gathered) {
  if (plan.want > 1 && gathered < plan.want) {
    if (gathered > queued) {
      misses_ = 0;  // some came: the wait saved a commit
    } else {
      misses_ = std::min(misses_ + 1, 6);
      skip_ = std::min(1 << misses_, kMaxSkip);
    }
  } else if (plan.want > 1) {
    misses_ = 0;
  } else if (skip_ > 0) {
    --skip_;
  }
  std::vector<std::string> ids;
  ids.reserve(writes.size());
  for (const auto& [id, queued_at] : writes) {
    const auto [it, fresh] = seen_.try_emplace(id);
    // Came back within kMaxWait of the commit that held its previous write.
    it->second.fast = !fresh && queued_at - it->second.done <= kMaxWait;
    ids.push_back(id);
  }
  for (const auto& [id, queued_at] : writes) seen_[id].done = done;
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  // Only the last two commits' sessions are tracked.
  for (const std::string& id : before_) {
    if (!std::binary_search(last_.begin(), last_.end(), id) &&
        !std::binary_search(ids.begin(), ids.end(), id)) {
      seen_.erase(id);
    }
  }
  before_ = std::move(last_);
  last_ = std::move(ids);
  last_done_ = done;
}

}  // namespace f2obo::server::store_detail
