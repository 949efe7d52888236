// How a session comes to exist on this server (installs.h): Install (claim
// its id, persist it, publish it), Create, Import, Fork, the stored
// sessions at start (Recover), and CreateAll and ImportAll, several
// sessions created or imported as a unit (CreateGroup; ImportGroup, a group
// moving between replicas).  Unlike a loop over Create or Import, they make
// nothing durable or findable until every member is: a crash or an error
// part-way leaves none of them, so no member can exist on its own, accept
// steps, and then block a retry of its group's creation (ALREADY_EXISTS) or
// be replaced by a rerun of the move (losing the steps it took).
#include "server/installs.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/problem_registry.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/wire_upgrade.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/fault_points.h"
#include "server/ids.h"
#include "server/install_checks.h"
#include "server/store/store_errors.h"

namespace f2obo::server {
namespace {

// INVALID_ARGUMENT naming the first entry whose problem class or family
// (as filled in) differs from the first entry's: a group's members share
// them (CreateGroup makes them so; ImportGroup must check).
absl::Status CheckSameProblem(const std::vector<std::shared_ptr<SessionEntry>>& entries,
                              const std::function<std::string(size_t)>& name) {
  // Compared as filled in (defaults and the family's class made explicit),
  // so that an export written with defaults matches one written without.
  std::vector<v1::SessionSpec> specs;
  for (const auto& e : entries) specs.push_back(ToSessionSpec(e->session->config(), 0));
  for (size_t i = 1; i < specs.size(); ++i) {
    if (specs[i].problem_class() != specs[0].problem_class()) {
      return absl::InvalidArgumentError(absl::StrCat(
          name(i), ".spec.problem_class: '", specs[i].problem_class(), "' differs from ", name(0),
          "'s '", specs[0].problem_class(),
          "'; a group's members share one problem class and family (each step is applied to "
          "all of them)"));
    }
    if (!google::protobuf::util::MessageDifferencer::Equals(specs[i].family(), specs[0].family())) {
      return absl::InvalidArgumentError(absl::StrCat(
          name(i), ".spec.family: {", specs[i].family().ShortDebugString(), "} differs from ",
          name(0), "'s {", specs[0].family().ShortDebugString(),
          "}; a group's members share one problem class and family (each step is applied to "
          "all of them)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::SessionInfo> Installs::Install(std::shared_ptr<SessionEntry> entry,
                                                  bool generate_id, bool persisted,
                                                  Deadline deadline) {
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
      entry->session->problem().NewMetricsEvaluator();
  if (!evaluator.ok()) return evaluator.status();
  if (absl::Status s = table_->Claim(*entry, generate_id, /*check_fence=*/!persisted); !s.ok()) {
    return s;
  }
  // A shared store may hold the id without this server holding it (another
  // server's session, or one evicted): taken as well.  (Two servers
  // creating one id at the same moment both pass here; the store's
  // insert-only PutSession gives it to the first to commit, the other is
  // ALREADY_EXISTS.)
  if (store_ != nullptr && store_->shared() && !persisted && !generate_id) {
    absl::StatusOr<int64_t> stored = store_->StoredStepIndex(entry->id);
    if (stored.ok() || !absl::IsNotFound(stored.status())) {
      table_->Unclaim(entry->id);
      if (!stored.ok()) {
        return StoreWriteFailed(stored.status(),
                                absl::StrCat("session '", entry->id, "' not created"));
      }
      return absl::AlreadyExistsError(absl::StrCat("session '", entry->id, "' already exists"));
    }
  }
  // Where a new session starts is its first checkpoint (written with it).
  const bool checkpoint = !persisted && limits_.max_checkpoints > 0;
  if (store_ != nullptr && !persisted) {
    // A write begun after the call's deadline would be answered
    // DEADLINE_EXCEEDED (by the client's side) and happen all the same.
    if (std::chrono::system_clock::now() >= deadline) {
      table_->Unclaim(entry->id);
      return absl::DeadlineExceededError(
          absl::StrCat("the deadline passed before session '", entry->id,
                       "' was written (building it took that long); not created"));
    }
    absl::Status s = store_->PutSession(RecordOf(*entry, checkpoint), deadline);
    if (!s.ok()) {
      table_->Unclaim(entry->id);
      if (absl::IsDeadlineExceeded(s)) {  // withdrawn from the store's queue
        return absl::DeadlineExceededError(
            absl::StrCat("session '", entry->id, "': ", s.message(), "; not created"));
      }
      return StoreWriteFailed(s, absl::StrCat("session '", entry->id, "' not created"));
    }
  }
  return PublishClaimed(std::move(entry), *std::move(evaluator), checkpoint,
                        /*stored=*/store_ != nullptr && !persisted);
}

SessionRecord Installs::RecordOf(const SessionEntry& e, bool checkpoint) const {
  absl::MutexLock lock(&e.mu);  // not shared yet (being installed): uncontended
  const Session& session = *e.session;
  // In parts: the head, and the committed state's parts read by the store
  // where they are (the snapshot is immutable), not a whole encoding of
  // them; so the store holds the state as a step leaves it.
  std::string head;
  {
    absl::MutexLock sums(&e.sums_mu);
    head = session.EncodeHead(session.state());
  }
  return SessionRecord{e.id,
                       ToSessionSpec(session.config(), e.exact_every),
                       std::move(head),
                       session.state().t,
                       std::vector<v1::StepReply>(e.replies.begin(), e.replies.end()),
                       checkpoint,
                       session.snapshot()};
}

v1::SessionInfo Installs::PublishClaimed(std::shared_ptr<SessionEntry> entry,
                                         std::unique_ptr<MetricsEvaluator> evaluator,
                                         bool checkpoint, bool stored) {
  v1::SessionInfo info = Ready(entry, std::move(evaluator), checkpoint, stored);
  FaultPoint("before_publish", entry->id).IgnoreError();  // tests interleave here
  table_->Publish(std::move(entry));
  return info;
}

v1::SessionInfo Installs::Ready(const std::shared_ptr<SessionEntry>& entry,
                                std::unique_ptr<MetricsEvaluator> evaluator, bool checkpoint,
                                bool stored) {
  Session& session = *entry->session;
  v1::SessionInfo info;
  {
    absl::MutexLock lock(&entry->mu);
    if (stored) {
      // RecordOf wrote it in parts: a step writes the parts it changes,
      // and the next checkpoint extends the first (a chain's start).
      entry->store_in_parts = true;
      entry->checkpoint_base = checkpoint ? session.state().t : 0;
      entry->changed_since_checkpoint.clear();
    }
    if (checkpoint) {
      checkpoints_->Keep(*entry, session.state().t,
                         store_ == nullptr ? session.Encode(session.state()) : std::string());
    }
    absl::MutexLock metrics_lock(&entry->metrics_mu);
    entry->metrics =
        SessionEntry::OpenMetrics(entry, pipeline_, std::move(evaluator), entry->generation,
                                  std::exchange(entry->inherited_metrics, {}));
    entry->Publish();
    info = entry->Info();
  }
  return info;
}

absl::StatusOr<v1::SessionInfo> Installs::Import(const v1::ImportSessionRequest& req,
                                                 Deadline deadline) {
  std::unique_ptr<Reservation> reserved;
  absl::StatusOr<std::shared_ptr<SessionEntry>> entry = PrepareImport(req, reserved);
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), /*generate_id=*/false, /*persisted=*/false, deadline);
  if (info.ok()) reserved->Keep();
  return info;
}

absl::StatusOr<std::shared_ptr<SessionEntry>> Installs::PrepareImport(
    const v1::ImportSessionRequest& req, std::unique_ptr<Reservation>& reserved) {
  const v1::SessionExport& ex = req.session();
  const std::string id = req.session_id().empty() ? ex.session_id() : req.session_id();
  if (!IsSessionId(id)) {
    return absl::InvalidArgumentError(absl::StrCat("session_id: must match ", kSessionIdPattern));
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(limits_, ex.spec(), UnreadOptions::kDrop);
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> room = table_->Reserve(*config, ex.spec(), /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  reserved = std::make_unique<Reservation>(table_, *room);
  absl::StatusOr<Checkpoint> state = DeserializeCheckpoint(ex.state());
  if (!state.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session.state: ", state.status().message()));
  }
  return BuildImported(id, ex, *config, *std::move(state), reserved->bytes());
}

absl::StatusOr<std::shared_ptr<SessionEntry>> Installs::BuildImported(const std::string& id,
                                                                      const v1::SessionExport& ex,
                                                                      const SessionConfig& config,
                                                                      Checkpoint state,
                                                                      int64_t reserved_bytes) {
  // An export whose spec names no algorithm (written by hand; servers fill
  // it in) is its state's, which has one layout only, not whatever the
  // class default is now.
  std::optional<SessionConfig> own;
  if (ex.spec().algorithm().empty() && !state.algorithm.empty() &&
      state.algorithm != config.algorithm) {
    v1::SessionSpec spec = ex.spec();
    spec.set_algorithm(state.algorithm);
    absl::StatusOr<SessionConfig> c = CheckedConfig(limits_, spec, UnreadOptions::kDrop);
    if (!c.ok()) return c.status();
    own = *std::move(c);
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Restore(own.has_value() ? *own : config, std::move(state));
  if (!session.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session: ", session.status().message()));
  }
  // Replies of the layout before RoundReport's, ExactMetrics' and
  // RunningMetrics' problem_class (an older server's store or export) are
  // read into the class's part, then checked and kept as this server's own.
  google::protobuf::RepeatedPtrField<v1::StepReply> replies = ex.replies();
  for (v1::StepReply& r : replies) v1::UpgradeStepReply(&r);
  if (absl::Status s = CheckImportedReplies(replies, (*session)->state()); !s.ok()) return s;
  if (absl::Status s = CheckXGroups((*session)->config(), (*session)->problem().x_dim()); !s.ok()) {
    return s;
  }
  auto entry = std::make_shared<SessionEntry>();
  entry->id = id;
  entry->exact_every = ExactEvery(ex.spec(), **session);
  entry->session = *std::move(session);
  {
    absl::MutexLock lock(&entry->mu);  // not shared yet: for the analysis' sake
    for (v1::StepReply& r : replies) {
      r.set_session_id(id);
      entry->replies.push_back(std::move(r));
    }
  }
  entry->reserved_bytes = reserved_bytes;
  return entry;
}

absl::StatusOr<std::shared_ptr<SessionEntry>> Installs::PrepareCreate(
    const v1::CreateSessionRequest& req, std::unique_ptr<Reservation>& reserved) {
  if (!req.session_id().empty() && !IsSessionId(req.session_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("session_id: must match ", kSessionIdPattern, " (or be empty)"));
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(limits_, req.spec());
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> room = table_->Reserve(*config, req.spec(), /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  reserved = std::make_unique<Reservation>(table_, *room);
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*config);
  if (!session.ok()) return session.status();
  if (absl::Status s = CheckXGroups(*config, (*session)->problem().x_dim()); !s.ok()) return s;
  if (!(*session)->problem().HasExactMetrics() && req.spec().metrics().exact_every() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics.exact_every: ", req.spec().metrics().exact_every(), ": family '",
        req.spec().family().name(),
        "' has no exact metrics (they need Hessian-vector products for the true "
        "hypergradient, or for the simple bilevel class the rows, neither of which its client "
        "gives the server); leave exact_every unset or 0"));
  }
  auto entry = std::make_shared<SessionEntry>();
  entry->id = req.session_id();
  entry->exact_every = ExactEvery(req.spec(), **session);
  entry->session = *std::move(session);
  entry->reserved_bytes = reserved->bytes();
  return entry;
}

absl::StatusOr<std::vector<v1::SessionInfo>> Installs::CreateAll(
    const std::vector<v1::CreateSessionRequest>& requests,
    const std::function<std::string(size_t)>& name, const PersistAll& persist) {
  std::vector<std::unique_ptr<Reservation>> reserved(requests.size());
  std::vector<std::shared_ptr<SessionEntry>> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].session_id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name(i), ": session_id: must be given"));
    }
    absl::StatusOr<std::shared_ptr<SessionEntry>> entry = PrepareCreate(requests[i], reserved[i]);
    if (!entry.ok()) return Named(name(i), entry.status());
    entries.push_back(*std::move(entry));
  }
  return InstallAll(std::move(entries), std::move(reserved), name, persist);
}

absl::StatusOr<std::vector<v1::SessionInfo>> Installs::ImportAll(
    const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
    const PersistAll& persist) {
  const auto name = [&](size_t i) { return absl::StrCat(field, "[", i, "]"); };
  std::vector<std::unique_ptr<Reservation>> reserved(requests.size());
  std::vector<std::shared_ptr<SessionEntry>> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<std::shared_ptr<SessionEntry>> entry = PrepareImport(requests[i], reserved[i]);
    if (!entry.ok()) return Named(name(i), entry.status());
    entries.push_back(*std::move(entry));
  }
  return InstallAll(std::move(entries), std::move(reserved), name, persist);
}

absl::StatusOr<std::vector<v1::SessionInfo>> Installs::InstallAll(
    std::vector<std::shared_ptr<SessionEntry>> entries,
    std::vector<std::unique_ptr<Reservation>> reserved,
    const std::function<std::string(size_t)>& name, const PersistAll& persist) {
  if (absl::Status s = CheckSameProblem(entries, name); !s.ok()) return s;
  std::vector<std::unique_ptr<MetricsEvaluator>> evaluators;
  for (size_t i = 0; i < entries.size(); ++i) {
    absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
        entries[i]->session->problem().NewMetricsEvaluator();
    if (!evaluator.ok()) return Named(name(i), evaluator.status());
    evaluators.push_back(*std::move(evaluator));
  }
  size_t claimed = 0;
  const auto unclaim = [&] {
    for (size_t i = 0; i < claimed; ++i) table_->Unclaim(entries[i]->id);
  };
  for (; claimed < entries.size(); ++claimed) {
    if (absl::Status s =
            table_->Claim(*entries[claimed], /*generate_id=*/false, /*check_fence=*/true);
        !s.ok()) {
      unclaim();
      return Named(name(claimed), s);
    }
  }
  // Where a new or imported session starts is its first checkpoint, as
  // Install.
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
    infos.push_back(PublishClaimed(std::move(entries[i]), std::move(evaluators[i]), checkpoint,
                                   /*stored=*/store_ != nullptr));
    reserved[i]->Keep();
  }
  return infos;
}

absl::StatusOr<v1::SessionInfo> Installs::Create(const v1::CreateSessionRequest& req,
                                                 Deadline deadline) {
  std::unique_ptr<Reservation> reserved;
  absl::StatusOr<std::shared_ptr<SessionEntry>> entry = PrepareCreate(req, reserved);
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), req.session_id().empty(), /*persisted=*/false, deadline);
  if (info.ok()) reserved->Keep();
  return info;
}

absl::StatusOr<v1::SessionInfo> Installs::Fork(const v1::ForkSessionRequest& req,
                                               Deadline deadline) {
  if (!req.new_session_id().empty() && !IsSessionId(req.new_session_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("new_session_id: must match ", kSessionIdPattern, " (or be empty)"));
  }
  if (req.has_at_t() && req.at_t() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("at_t: ", req.at_t(), " is not a step (>= 0)"));
  }
  absl::StatusOr<std::shared_ptr<SessionEntry>> found = table_->FindFresh(req.session_id());
  if (!found.ok()) return found.status();
  v1::SessionSpec spec;
  absl::StatusOr<Checkpoint> checkpoint;
  int64_t at_t = 0;
  std::vector<v1::StepMetrics> history;
  {
    // Only what the fork starts from is taken under the source's lock.
    const SessionEntry& source = **found;
    absl::MutexLock lock(&source.mu);
    if (absl::Status s = source.CheckNotRemoved(); !s.ok()) return s;
    spec = ToSessionSpec(source.session->config(), source.exact_every);
    at_t = req.has_at_t() ? req.at_t() : source.session->state().t - 1;
    checkpoint = checkpoints_->After(source, at_t, "fork at");
    // The fork's metrics start with its source's up to the fork point.
    for (v1::StepMetrics& m : source.metrics->Snapshot(0)) {
      if (m.t() <= at_t) history.push_back(std::move(m));
    }
  }
  if (!checkpoint.ok()) return checkpoint.status();
  const std::string source_algorithm = spec.algorithm();
  const bool other_algorithm = !req.algorithm().empty() && req.algorithm() != source_algorithm;
  if (other_algorithm) {
    spec.set_algorithm(req.algorithm());
    *spec.mutable_options() = req.options();  // over the new algorithm's defaults
  } else {
    spec.mutable_options()->MergeFrom(req.options());
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(limits_, spec);
  if (!config.ok()) return config.status();
  if (other_algorithm) {
    // Its class and options, named as such, before the state is tried.
    absl::StatusOr<std::unique_ptr<Problem>> problem = CreateProblem(*config);
    if (!problem.ok()) return problem.status();
  }
  absl::StatusOr<int64_t> room = table_->Reserve(*config, spec, /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  Reservation reserved(table_, *room);
  checkpoint->algorithm = config->algorithm;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Restore(*config, *std::move(checkpoint));
  if (!session.ok()) {
    if (!other_algorithm) return session.status();
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: '", config->algorithm, "' cannot continue the state of '",
                     source_algorithm, "' at t = ", at_t, ": ", session.status().message()));
  }
  auto entry = std::make_shared<SessionEntry>();
  entry->id = req.new_session_id();
  entry->exact_every = spec.metrics().exact_every();
  entry->session = *std::move(session);
  entry->reserved_bytes = reserved.bytes();
  entry->inherited_metrics = std::move(history);
  absl::StatusOr<v1::SessionInfo> info =
      Install(std::move(entry), req.new_session_id().empty(), /*persisted=*/false, deadline);
  if (info.ok()) reserved.Keep();
  return info;
}

}  // namespace f2obo::server
