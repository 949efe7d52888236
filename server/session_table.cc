#include "server/session_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/oracle.h"
#include "server/oracle_message_limits.h"
#include "server/session_footprint.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::StatusOr<std::shared_ptr<SessionEntry>> SessionTable::Find(const std::string& id) const {
  {
    absl::MutexLock lock(&mu_);
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) {
      const_cast<SessionTable*>(this)->Touch(id);  // recency: not what the table answers
      return it->second;
    }
    if (loader_ == nullptr) {
      // Moved away (a fence left as a tombstone): a proxy with the old ring
      // still sends it here; the client is to retry, not to give up.
      if (absl::Status fenced = CheckFence(id); !fenced.ok()) return fenced;
      return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
    }
  }
  // Loading changes what is held, not what the table answers.
  return const_cast<SessionTable*>(this)->Load(id);
}

void SessionTable::EnableLoading(Loader loader) { loader_ = std::move(loader); }

absl::StatusOr<std::shared_ptr<SessionEntry>> SessionTable::FindFresh(const std::string& id) const {
  bool held = false;
  {
    absl::MutexLock lock(&mu_);
    held = loader_ != nullptr && sessions_.count(id) > 0;
  }
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = Find(id);
  if (!held || !found.ok()) return found;
  absl::StatusOr<bool> current = store_->CopyIsCurrent(id, (*found)->PublishedView()->state->t);
  if (current.ok() && *current) return found;
  if (!current.ok() && !absl::IsNotFound(current.status())) return current.status();
  // Behind the store or rewritten there (or deleted) by another server:
  // loaded anew.
  const_cast<SessionTable*>(this)->Drop(*found);
  return Find(id);
}

absl::StatusOr<std::shared_ptr<SessionEntry>> SessionTable::Load(const std::string& id) {
  if (absl::Status fenced = CheckFence(id); !fenced.ok()) return fenced;
  {
    // Claimed as an install claims its id: a concurrent Find of the same id
    // waits for this load and then finds its result.
    absl::MutexLock lock(&mu_);
    const auto settled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return installing_.count(id) == 0;
    };
    mu_.Await(absl::Condition(&settled));
    const auto it = sessions_.find(id);
    if (it != sessions_.end()) {  // loaded (or created) meanwhile
      Touch(id);
      return it->second;
    }
    installing_.insert(id);
  }
  absl::StatusOr<std::shared_ptr<SessionEntry>> loaded = loader_(id);
  if (!loaded.ok()) {
    Unclaim(id);
    if (absl::IsNotFound(loaded.status())) {
      return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
    }
    return loaded.status();
  }
  loads_.fetch_add(1, std::memory_order_relaxed);
  std::vector<std::shared_ptr<SessionEntry>> evicted;
  {
    absl::MutexLock lock(&mu_);
    installing_.erase(id);
    sessions_[id] = *loaded;
    Touch(id);
    EvictLocked(0, 0, &evicted);
  }
  Closed(evicted);
  return loaded;
}

void SessionTable::Touch(const std::string& id) {
  const auto pos = recency_pos_.find(id);
  if (pos != recency_pos_.end()) {
    recency_.splice(recency_.begin(), recency_, pos->second);
    return;
  }
  recency_.push_front(id);
  recency_pos_[id] = recency_.begin();
}

void SessionTable::Erase(const std::string& id) {
  sessions_.erase(id);
  const auto pos = recency_pos_.find(id);
  if (pos == recency_pos_.end()) return;
  recency_.erase(pos->second);
  recency_pos_.erase(pos);
}

size_t SessionTable::ResidentBudget() const {
  const int max = limits_.max_resident_sessions > 0
                      ? std::min(limits_.max_resident_sessions, limits_.max_sessions)
                      : limits_.max_sessions;
  return static_cast<size_t>(std::max(max, 1));
}

void SessionTable::EvictLocked(size_t extra_sessions, int64_t extra_bytes,
                               std::vector<std::shared_ptr<SessionEntry>>* out) {
  if (loader_ == nullptr) return;
  const size_t budget = ResidentBudget();
  const auto over = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sessions_.size() + installing_.size() + extra_sessions > budget ||
           (limits_.max_total_state_bytes > 0 &&
            reserved_bytes_ + extra_bytes > limits_.max_total_state_bytes);
  };
  auto it = recency_.end();
  while (over() && it != recency_.begin()) {
    --it;
    const auto held = sessions_.find(*it);
    // Idle: held by the table alone (copies are made under mu_ only, so
    // none can appear meanwhile): no round, no call, no stream uses it.
    if (held == sessions_.end() || held->second.use_count() != 1) continue;
    std::shared_ptr<SessionEntry> e = held->second;
    reserved_bytes_ -= e->reserved_bytes;
    const std::string id = *it;
    ++it;  // past the node Erase removes
    Erase(id);
    out->push_back(std::move(e));
  }
}

void SessionTable::Closed(const std::vector<std::shared_ptr<SessionEntry>>& evicted) {
  for (const std::shared_ptr<SessionEntry>& e : evicted) {
    // Not the store's copy, only this server's: its watchers end (a
    // reload opens a new channel).
    absl::MutexLock lock(&e->metrics_mu);
    if (e->metrics != nullptr) e->metrics->Close();
  }
  evictions_.fetch_add(static_cast<int64_t>(evicted.size()), std::memory_order_relaxed);
}

void SessionTable::Drop(const std::shared_ptr<SessionEntry>& entry) {
  {
    absl::MutexLock entry_lock(&entry->mu);
    if (entry->dropped || entry->removed) return;
    entry->dropped = true;
  }
  bool held = false;
  {
    absl::MutexLock lock(&mu_);
    const auto it = sessions_.find(entry->id);
    if (it != sessions_.end() && it->second == entry) {
      Erase(entry->id);
      reserved_bytes_ -= entry->reserved_bytes;
      held = true;
    }
  }
  if (!held) return;
  absl::MutexLock metrics_lock(&entry->metrics_mu);
  if (entry->metrics != nullptr) entry->metrics->Close();
}

size_t SessionTable::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

absl::StatusOr<int64_t> SessionTable::Reserve(const SessionConfig& config,
                                              const v1::SessionSpec& spec, bool enforce_limits) {
  const SessionFootprint f = EstimateFootprint(config.family);
  if (enforce_limits && IsOracleFamily(config.family.name)) {
    if (absl::Status s = CheckOracleMessages(config.family, limits_.max_message_bytes); !s.ok()) {
      return s;
    }
  }
  if (store_ != nullptr && enforce_limits) {
    const int64_t max_record = store_->max_record_bytes();
    if (f.record_bytes > max_record) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec.family: the session's state (x of about ", f.x,
                       " entries, y and z of ", f.y, " each) would take about ", f.record_bytes,
                       " bytes in the store, beyond its maximum record size of ", max_record,
                       " bytes (SQLite's SQLITE_MAX_LENGTH)"));
    }
    if (static_cast<int64_t>(spec.ByteSizeLong()) > max_record) {
      return absl::ResourceExhaustedError(
          absl::StrCat("spec: ", spec.ByteSizeLong(),
                       " bytes, beyond the store's maximum record size of ", max_record, " bytes"));
    }
  }
  // Without a store, a session's checkpoints are kept in memory.
  const int64_t memory = static_cast<int64_t>(std::min(
      9.0e18, static_cast<double>(f.memory_bytes) +
                  (store_ == nullptr ? static_cast<double>(std::max(limits_.max_checkpoints, 0)) *
                                           static_cast<double>(f.record_bytes)
                                     : 0.0)));
  std::vector<std::shared_ptr<SessionEntry>> evicted;
  absl::StatusOr<int64_t> out = ReserveLocked(memory, f, config, enforce_limits, &evicted);
  Closed(evicted);
  return out;
}

absl::StatusOr<int64_t> SessionTable::ReserveLocked(
    int64_t memory, const SessionFootprint& f, const SessionConfig& config, bool enforce_limits,
    std::vector<std::shared_ptr<SessionEntry>>* evicted) {
  absl::MutexLock lock(&mu_);
  // Room made by evicting idle sessions of a shared store first.
  if (enforce_limits) EvictLocked(0, memory, evicted);
  if (enforce_limits && limits_.max_total_state_bytes > 0 &&
      memory > limits_.max_total_state_bytes - reserved_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "spec.family: a session of about ", memory, " bytes of memory (x of about ", f.x,
        " entries, y and z of ", f.y, " each, with the copies a round and a commit make",
        store_ == nullptr ? " and its in-memory checkpoints" : "",
        IsOracleFamily(config.family.name) ? " and what an oracle session's stream holds" : "",
        ") does not fit the memory limit max_total_state_bytes = ", limits_.max_total_state_bytes,
        " (--max_total_state_bytes; sessions hold ", reserved_bytes_, ")"));
  }
  reserved_bytes_ += memory;
  return memory;
}

void SessionTable::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_bytes_ -= bytes;
}

int64_t SessionTable::reserved_bytes() const {
  absl::MutexLock lock(&mu_);
  return reserved_bytes_;
}

absl::Status SessionTable::Claim(SessionEntry& entry, bool generate_id, bool check_fence) {
  std::vector<std::shared_ptr<SessionEntry>> evicted;
  absl::Status s = ClaimLocked(entry, generate_id, check_fence, &evicted);
  Closed(evicted);
  return s;
}

absl::Status SessionTable::ClaimLocked(SessionEntry& entry, bool generate_id, bool check_fence,
                                       std::vector<std::shared_ptr<SessionEntry>>* evicted) {
  // Reserve the id, then build everything outside the map lock; the entry
  // is published only once complete, so no RPC can see a session that is
  // not durable yet, has no metrics channel, or is about to be rolled back.
  absl::MutexLock lock(&mu_);
  // An id being installed by another call: its outcome decides this one's
  // (a retry after a create answered DEADLINE_EXCEEDED learns whether that
  // create happened: ALREADY_EXISTS, or it goes ahead).  Await re-checks at
  // every release of mu_, so the install's end needs no signal.
  if (!generate_id) {
    const auto settled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return installing_.count(entry.id) == 0;
    };
    mu_.Await(absl::Condition(&settled));
  }
  EvictLocked(1, 0, evicted);  // a shared store's idle sessions make room
  if (static_cast<int>(sessions_.size() + installing_.size()) >= limits_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sessions: the server holds max_sessions = ", limits_.max_sessions));
  }
  const auto taken = [&](const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sessions_.count(id) > 0 || installing_.count(id) > 0;
  };
  if (generate_id) {
    do {
      // A shared store's servers generate ids independently: random ones
      // (64 bits) do not meet another server's.
      entry.id = loader_ != nullptr ? absl::StrCat("s", absl::Hex(id_random_(), absl::kZeroPad16))
                                    : absl::StrCat("s", next_generated_id_++);
    } while (taken(entry.id));
  }
  // A session of a fenced key belongs to its new owner (recovery loads
  // the frozen copies, which the fence keeps from stepping).  Checked
  // before whether the id is taken: here the frozen copy of a moved
  // session still holds it, and the caller must retry at the new owner
  // (UNAVAILABLE), not give up (ALREADY_EXISTS).
  if (check_fence) {
    if (absl::Status s = CheckFence(entry.id); !s.ok()) return s;
  }
  if (!generate_id && taken(entry.id)) {
    return absl::AlreadyExistsError(absl::StrCat("session '", entry.id, "' already exists"));
  }
  installing_.insert(entry.id);
  return absl::OkStatus();
}

void SessionTable::Unclaim(const std::string& id) {
  absl::MutexLock lock(&mu_);
  installing_.erase(id);
}

void SessionTable::Publish(std::shared_ptr<SessionEntry> entry) {
  absl::MutexLock lock(&mu_);
  installing_.erase(entry->id);
  Touch(entry->id);
  sessions_[entry->id] = std::move(entry);
}

absl::Status SessionTable::Remove(const std::string& id, bool from_store, Deadline deadline) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = Find(id);
  if (!found.ok()) return found.status();
  SessionEntry& e = **found;
  std::shared_ptr<SessionMetrics> metrics;
  bool held = false;
  {
    // Serialize with the session's steps; gone from disk before from
    // memory, and marked removed before its lock is released, so that a
    // step that found the entry earlier neither applies nor persists
    // (which would bring the session back at the next restart).
    // `from_store` = false: the caller (a group delete) already removed it
    // from the store in its own transaction.  A round running meanwhile
    // is stopped first (and may run again if the delete fails).
    e.stop_rounds.store(true);
    absl::MutexLock entry_lock(&e.mu);
    if (e.removed) {  // a concurrent delete won
      return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
    }
    if (store_ != nullptr && from_store) {
      if (absl::Status s = store_->DeleteSession(id, deadline); !s.ok()) {
        e.stop_rounds.store(false);
        if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
          return absl::DeadlineExceededError(
              absl::StrCat("session '", id, "': ", s.message(), "; not deleted"));
        }
        return StoreWriteFailed(s, absl::StrCat("session '", id, "' not deleted"));
      }
    }
    {
      absl::MutexLock lock(&mu_);
      const auto it = sessions_.find(id);
      if (it != sessions_.end() && it->second == *found) {
        Erase(id);
        held = true;
      }
    }
    e.removed = true;
    metrics = e.metrics;
  }
  // A copy dropped meanwhile (stale) returned its memory then.
  if (held) Release(e.reserved_bytes);
  metrics->Close();
  return absl::OkStatus();
}

}  // namespace f2obo::server
