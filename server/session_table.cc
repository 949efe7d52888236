#include "server/session_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/oracle.h"
#include "server/oracle_message_limits.h"
#include "server/session_footprint.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::StatusOr<std::shared_ptr<SessionEntry>> SessionTable::Find(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    // Moved away (a fence left as a tombstone): a proxy with the old ring
    // still sends it here; the client is to retry, not to give up.
    if (absl::Status fenced = CheckFence(id); !fenced.ok()) return fenced;
    return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  }
  return it->second;
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
  absl::MutexLock lock(&mu_);
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
  if (static_cast<int>(sessions_.size() + installing_.size()) >= limits_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sessions: the server holds max_sessions = ", limits_.max_sessions));
  }
  const auto taken = [&](const std::string& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sessions_.count(id) > 0 || installing_.count(id) > 0;
  };
  if (generate_id) {
    do {
      entry.id = absl::StrCat("s", next_generated_id_++);
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
  sessions_[entry->id] = std::move(entry);
}

absl::Status SessionTable::Remove(const std::string& id, bool from_store, Deadline deadline) {
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = Find(id);
  if (!found.ok()) return found.status();
  SessionEntry& e = **found;
  std::shared_ptr<SessionMetrics> metrics;
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
      if (it != sessions_.end() && it->second == *found) sessions_.erase(it);
    }
    e.removed = true;
    metrics = e.metrics;
  }
  Release(e.reserved_bytes);
  metrics->Close();
  return absl::OkStatus();
}

}  // namespace f2obo::server
