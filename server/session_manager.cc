#include "server/session_manager.h"

#include "absl/strings/str_cat.h"
#include "core/oracle.h"
#include "core/problem_registry.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/number_checks.h"
#include "server/fault_points.h"
#include "server/oracle_stream.h"
#include "server/session_footprint.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

// Exact metrics cost more than a round: the client's policy, else the
// problem class's default.  One rule for every way a session comes to be
// (create, import, recovery), so that an imported session without the
// field does not silently lose its metrics.
int SessionManager::ExactEvery(const v1::SessionSpec& spec, const Session& session) {
  if (!session.problem().HasExactMetrics()) return 0;
  if (spec.metrics().has_exact_every()) return spec.metrics().exact_every();
  return session.problem().DefaultExactEvery();
}

SessionManager::SessionManager(Limits limits, MetricsPipeline* pipeline, SessionStore* store)
    : limits_(limits), pipeline_(pipeline), store_(store) {}

absl::StatusOr<std::shared_ptr<SessionManager::Entry>> SessionManager::Find(
    const std::string& id) const {
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

absl::Status SessionManager::CheckNotRemoved(const Entry& e) {
  if (!e.removed) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("session '", e.id, "' was deleted"));
}

absl::StatusOr<SessionConfig> SessionManager::CheckedConfig(const v1::SessionSpec& spec,
                                                            UnreadOptions unread) const {
  // Every number of the spec is an input number (the proto's conventions),
  // checked before any of it is converted or allocated.
  if (absl::Status s = CheckSpecNumbers(spec, "spec"); !s.ok()) return s;
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec, unread);
  if (!config.ok()) return config.status();
  // Bound the state before anything is allocated: an upper estimate of y
  // plus x (quadratic's x_dim), in 64 bits, a negative dimension counting as
  // 0 (the families refuse those), so that no field can hide another.
  const FamilyConfig& f = config->family;
  const auto dim = [](int v) { return static_cast<int64_t>(std::max(v, 0)); };
  // A multi-task session may come to hold a y per task (tasks are checked
  // against max_tasks first, so the product stays far inside int64).
  const int64_t per_task =
      (dim(f.features) + 1) * std::max<int64_t>(dim(f.classes), 1) + dim(f.y_dim) + dim(f.x_dim);
  const int64_t y_bound =
      f.tasks > 0 && f.tasks <= limits_.max_tasks ? per_task * f.tasks : per_task;
  if (f.tasks > limits_.max_tasks) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.family.tasks: m = ", f.tasks,
                     " exceeds the server limit max_tasks = ", limits_.max_tasks));
  }
  if (y_bound > limits_.max_y_dim) {
    return absl::ResourceExhaustedError(
        absl::StrCat("spec.family: a session of about ", y_bound,
                     " state variables (x and y) exceeds the per-session limit max_y_dim = ",
                     limits_.max_y_dim));
  }
  // Only the caps the algorithm reads: an option it ignores keeps its
  // generic default, which may exceed the server's limit (an export
  // carries only the options its algorithm reads).
  const AlgorithmOptions& o = config->options;
  const AlgorithmInfo* info = FindAlgorithm(config->algorithm);
  const auto reads = [&](Opt opt) { return info == nullptr || info->reads.Has(opt); };
  // (sf2obo's schedule cap is used by its theory schedule only.)
  const auto unused = [&](Opt id) {
    return id == Opt::max_scheduled_inner_steps && o.inner_schedule != InnerSchedule::kTheory;
  };
  for (Opt id : IterationOptions()) {
    const OptionInfo& opt = GetOptionInfo(id);
    if (!reads(id) || unused(id) || opt.get(o) <= limits_.max_inner_iterations) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "options.", opt.name, " = ", opt.get(o), ": above the server limit max_inner_iterations = ",
        limits_.max_inner_iterations, " (it caps every option counting iterations)"));
  }
  if (spec.metrics().has_exact_every() && spec.metrics().exact_every() < 0) {
    return absl::InvalidArgumentError("spec.metrics.exact_every: must be >= 0");
  }
  return config;
}

absl::StatusOr<int64_t> SessionManager::Reserve(const SessionConfig& config,
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

void SessionManager::Release(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_bytes_ -= bytes;
}

int64_t SessionManager::reserved_bytes() const {
  absl::MutexLock lock(&mu_);
  return reserved_bytes_;
}

std::shared_ptr<SessionMetrics> SessionManager::OpenMetrics(
    const std::shared_ptr<Entry>& entry, std::unique_ptr<MetricsEvaluator> evaluator,
    uint64_t generation, std::vector<v1::StepMetrics> history) {
  // The worker's accumulator adds to the session's running sums under
  // sums_mu, never waiting for a round (which holds mu), unless a rollback
  // replaced the session since (a later generation).
  std::weak_ptr<Entry> weak = entry;
  const int64_t start_t = entry->session->state().t - 1;  // its last step applied
  return pipeline_->Open(
      entry->id, std::move(evaluator),
      [weak, generation](const ClassMetrics* m, double probability) {
        RunningMetrics out;
        if (std::shared_ptr<Entry> e = weak.lock()) {
          absl::MutexLock lock(&e->sums_mu);
          if (e->generation == generation) {
            if (m != nullptr) {
              e->session->AddMetrics(*m, probability);
            } else {
              e->session->AddSkipped();
            }
            PublishSums(*e);
          }
          out = e->session->metrics();
        }
        return out;
      },
      start_t, std::move(history));
}

absl::StatusOr<v1::SessionInfo> SessionManager::Create(const v1::CreateSessionRequest& req,
                                                       Deadline deadline) {
  std::unique_ptr<Reservation> reserved;
  absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareCreate(req, reserved);
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), req.session_id().empty(), /*persisted=*/false, deadline);
  if (info.ok()) reserved->Keep();
  return info;
}

absl::StatusOr<std::vector<std::string>> SessionManager::Recover(std::vector<StoredGroup>* groups) {
  if (store_ == nullptr) return std::vector<std::string>{};
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  if (!loaded.ok()) return loaded.status();
  if (groups != nullptr) *groups = std::move(loaded->groups);
  {
    absl::MutexLock lock(&fence_mu_);
    for (const StoredFence& f : loaded->fences) fences_[f.key] = f.target;
  }
  std::vector<std::string> problems = loaded->damaged;
  for (StoredSession& stored : loaded->sessions) {
    // Stored by a server (older ones wrote every option): unread options
    // never acted, and are dropped (convert.h).
    absl::StatusOr<SessionConfig> config = ToSessionConfig(stored.spec, UnreadOptions::kDrop);
    absl::StatusOr<std::unique_ptr<Session>> session =
        config.ok() ? Session::Restore(*config, std::move(stored.state)) : config.status();
    if (!session.ok()) {
      problems.push_back(absl::StrCat("session '", stored.id, "': ", session.status().message()));
      continue;
    }
    auto entry = std::make_shared<Entry>();
    entry->id = stored.id;
    entry->exact_every = ExactEvery(stored.spec, **session);
    entry->session = *std::move(session);
    {
      absl::MutexLock lock(&entry->mu);  // not shared yet: for the analysis' sake
      for (v1::StepReply& r : stored.replies) entry->replies.push_back(std::move(r));
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
    Reservation reserved(this, *Reserve(*config, stored.spec, /*enforce_limits=*/false));
    entry->reserved_bytes = reserved.bytes();
    absl::StatusOr<v1::SessionInfo> info =
        Install(std::move(entry), /*generate_id=*/false, /*persisted=*/true);
    if (!info.ok()) {
      problems.push_back(absl::StrCat("session '", stored.id, "': ", info.status().message()));
    } else {
      reserved.Keep();
    }
  }
  return problems;
}

absl::Status SessionManager::Delete(const std::string& id, bool from_store, Deadline deadline) {
  absl::StatusOr<std::shared_ptr<Entry>> found = Find(id);
  if (!found.ok()) return found.status();
  Entry& e = **found;
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
    if (e.removed) {  // a concurrent Delete won
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

size_t SessionManager::size() const {
  absl::MutexLock lock(&mu_);
  return sessions_.size();
}

absl::StatusOr<std::shared_ptr<SessionMetrics>> SessionManager::Metrics(
    const std::string& id) const {
  absl::StatusOr<std::shared_ptr<Entry>> e = Find(id);
  if (!e.ok()) return e.status();
  absl::MutexLock lock(&(*e)->metrics_mu);
  return (*e)->metrics;
}

}  // namespace f2obo::server
