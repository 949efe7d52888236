// How a session comes to exist on this server: Install (claim its id,
// persist it, publish it), Import (with Export, what it takes, and the check
// of an export's reply cache), and CreateAll and ImportAll, several
// sessions created or imported as a unit (CreateGroup; ImportGroup, a group
// moving between replicas).  Unlike a loop over Create or Import, they make
// nothing durable or findable until every member is: a crash or an error
// part-way leaves none of them, so no member can exist on its own, accept
// steps, and then block a retry of its group's creation (ALREADY_EXISTS) or
// be replaced by a rerun of the move (losing the steps it took).
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/number_checks.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/fault_points.h"
#include "server/ids.h"
#include "server/session_manager.h"
#include "server/store/store_errors.h"

namespace f2obo::server {

absl::StatusOr<v1::SessionExport> SessionManager::Export(const std::string& id,
                                                         int64_t max_bytes) const {
  absl::StatusOr<std::shared_ptr<Entry>> e = Find(id);
  if (!e.ok()) return e.status();
  absl::MutexLock lock(&(*e)->mu);
  if (absl::Status s = CheckNotRemoved(**e); !s.ok()) return s;
  const auto too_large = [&](int64_t bytes, const char* how) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "session '", id, "': its export is ", how, bytes, " bytes, beyond this server's ",
        "--max_message_bytes = ", max_bytes,
        "; ExportSessionStream sends it in chunks (and ImportSessionStream takes them)"));
  };
  // The state's encoding is at least its numbers (8 bytes each, and a
  // length per vector): known without encoding it, which at 1,000,000
  // tasks would take ~0.5 GB only to be refused.
  const SessionState& state = (*e)->session->state();
  int64_t numbers = state.x.size() + static_cast<int64_t>(state.aux.size());
  for (const Vector& v : state.vectors) numbers += v.size();
  const int64_t least = 8 * numbers + static_cast<int64_t>(state.aux.payload_bytes());
  if (least > max_bytes) return too_large(least, "at least ");
  v1::SessionExport out;
  out.set_session_id(id);
  *out.mutable_spec() = ToSessionSpec((*e)->session->config(), (*e)->exact_every);
  out.set_state(Encode(**e, state));
  for (const v1::StepReply& r : (*e)->replies) *out.add_replies() = r;
  const int64_t bytes = static_cast<int64_t>(out.ByteSizeLong());
  if (bytes > max_bytes) return too_large(bytes, "");
  return out;
}

// The reply cache is served as it is (a retry gets the cached reply), so
// each entry is checked like the replies this server makes: oldest first,
// each index in [1, next_t) (a reply for a later index would be served,
// marked replayed, for a step never applied), x of the session's x_dim, and
// every number finite.
absl::Status SessionManager::CheckImportedReplies(const v1::SessionExport& ex,
                                                  const SessionState& state) {
  int64_t previous = 0;
  for (int i = 0; i < ex.replies_size(); ++i) {
    const v1::StepReply& r = ex.replies(i);
    const std::string field = absl::StrCat("session.replies[", i, "]");
    if (r.t() < 1 || r.t() >= state.t) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".t = ", r.t(), ": outside [1, ", state.t, "), the steps the state has applied"));
    }
    if (r.t() <= previous) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".t = ", r.t(),
                       ": step indices must increase (the previous entry has t = ", previous, ")"));
    }
    previous = r.t();
    if (r.x_size() != state.x.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".x: has ", r.x_size(), " entries, expected x_dim = ", state.x.size()));
    }
    if (absl::Status s = CheckNumbers(r, field, std::numeric_limits<double>::infinity()); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::SessionInfo> SessionManager::Install(std::shared_ptr<Entry> entry,
                                                        bool generate_id, bool persisted,
                                                        Deadline deadline) {
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
      entry->session->problem().NewMetricsEvaluator();
  if (!evaluator.ok()) return evaluator.status();
  if (absl::Status s = Claim(*entry, generate_id, /*check_fence=*/!persisted); !s.ok()) return s;
  // Where a new session starts is its first checkpoint (written with it).
  const bool checkpoint = !persisted && limits_.max_checkpoints > 0;
  if (store_ != nullptr && !persisted) {
    // A write begun after the call's deadline would be answered
    // DEADLINE_EXCEEDED (by the client's side) and happen all the same.
    if (std::chrono::system_clock::now() >= deadline) {
      Unclaim(entry->id);
      return absl::DeadlineExceededError(
          absl::StrCat("the deadline passed before session '", entry->id,
                       "' was written (building it took that long); not created"));
    }
    absl::Status s = store_->PutSession(RecordOf(*entry, checkpoint), deadline);
    if (!s.ok()) {
      Unclaim(entry->id);
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

absl::Status SessionManager::Claim(Entry& entry, bool generate_id, bool check_fence) {
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

void SessionManager::Unclaim(const std::string& id) {
  absl::MutexLock lock(&mu_);
  installing_.erase(id);
}

SessionRecord SessionManager::RecordOf(const Entry& e, bool checkpoint) const {
  absl::MutexLock lock(&e.mu);  // not shared yet (being installed): uncontended
  const Session& session = *e.session;
  // In parts: the head, and the committed state's parts read by the store
  // where they are (the snapshot is immutable), not a whole encoding of
  // them; so the store holds the state as a step leaves it (issue 23 item 4).
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

v1::SessionInfo SessionManager::PublishClaimed(std::shared_ptr<Entry> entry,
                                               std::unique_ptr<MetricsEvaluator> evaluator,
                                               bool checkpoint, bool stored) {
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
      KeepCheckpoint(*entry, session.state().t,
                     store_ == nullptr ? session.Encode(session.state()) : std::string());
    }
    absl::MutexLock metrics_lock(&entry->metrics_mu);
    entry->metrics = OpenMetrics(entry, std::move(evaluator), entry->generation,
                                 std::exchange(entry->inherited_metrics, {}));
    Publish(*entry);
    info = Info(*entry);
  }
  FaultPoint("before_publish", entry->id).IgnoreError();  // tests interleave here
  {
    absl::MutexLock lock(&mu_);
    installing_.erase(entry->id);
    sessions_[entry->id] = entry;
  }
  return info;
}

absl::StatusOr<v1::SessionInfo> SessionManager::Import(const v1::ImportSessionRequest& req,
                                                       Deadline deadline) {
  std::unique_ptr<Reservation> reserved;
  absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareImport(req, reserved);
  if (!entry.ok()) return entry.status();
  absl::StatusOr<v1::SessionInfo> info =
      Install(*std::move(entry), /*generate_id=*/false, /*persisted=*/false, deadline);
  if (info.ok()) reserved->Keep();
  return info;
}

absl::StatusOr<std::shared_ptr<SessionManager::Entry>> SessionManager::PrepareImport(
    const v1::ImportSessionRequest& req, std::unique_ptr<Reservation>& reserved) {
  const v1::SessionExport& ex = req.session();
  const std::string id = req.session_id().empty() ? ex.session_id() : req.session_id();
  if (!IsSessionId(id)) {
    return absl::InvalidArgumentError(absl::StrCat("session_id: must match ", kSessionIdPattern));
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(ex.spec(), UnreadOptions::kDrop);
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> room = Reserve(*config, ex.spec(), /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  reserved = std::make_unique<Reservation>(this, *room);
  absl::StatusOr<Checkpoint> state = DeserializeCheckpoint(ex.state());
  if (!state.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session.state: ", state.status().message()));
  }
  return BuildImported(id, ex, *config, *std::move(state), reserved->bytes());
}

absl::StatusOr<std::shared_ptr<SessionManager::Entry>> SessionManager::BuildImported(
    const std::string& id, const v1::SessionExport& ex, const SessionConfig& config,
    Checkpoint state, int64_t reserved_bytes) {
  // An export whose spec names no algorithm (written by hand; servers fill
  // it in) is its state's, which has one layout only, not whatever the
  // class default is now.
  std::optional<SessionConfig> own;
  if (ex.spec().algorithm().empty() && !state.algorithm.empty() &&
      state.algorithm != config.algorithm) {
    v1::SessionSpec spec = ex.spec();
    spec.set_algorithm(state.algorithm);
    absl::StatusOr<SessionConfig> c = CheckedConfig(spec, UnreadOptions::kDrop);
    if (!c.ok()) return c.status();
    own = *std::move(c);
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Restore(own.has_value() ? *own : config, std::move(state));
  if (!session.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("session: ", session.status().message()));
  }
  if (absl::Status s = CheckImportedReplies(ex, (*session)->state()); !s.ok()) return s;
  auto entry = std::make_shared<Entry>();
  entry->id = id;
  entry->exact_every = ExactEvery(ex.spec(), **session);
  entry->session = *std::move(session);
  {
    absl::MutexLock lock(&entry->mu);  // not shared yet: for the analysis' sake
    for (v1::StepReply r : ex.replies()) {
      r.set_session_id(id);
      entry->replies.push_back(std::move(r));
    }
  }
  entry->reserved_bytes = reserved_bytes;
  return entry;
}

absl::StatusOr<std::shared_ptr<SessionManager::Entry>> SessionManager::PrepareCreate(
    const v1::CreateSessionRequest& req, std::unique_ptr<Reservation>& reserved) {
  if (!req.session_id().empty() && !IsSessionId(req.session_id())) {
    return absl::InvalidArgumentError(
        absl::StrCat("session_id: must match ", kSessionIdPattern, " (or be empty)"));
  }
  absl::StatusOr<SessionConfig> config = CheckedConfig(req.spec());
  if (!config.ok()) return config.status();
  absl::StatusOr<int64_t> room = Reserve(*config, req.spec(), /*enforce_limits=*/true);
  if (!room.ok()) return room.status();
  reserved = std::make_unique<Reservation>(this, *room);
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*config);
  if (!session.ok()) return session.status();
  if (!(*session)->problem().HasExactMetrics() && req.spec().metrics().exact_every() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics.exact_every: ", req.spec().metrics().exact_every(), ": family '",
        req.spec().family().name(),
        "' has no exact metrics (they need Hessian-vector products for the true "
        "hypergradient, or for the simple bilevel class the rows, neither of which its client "
        "gives the server); leave exact_every unset or 0"));
  }
  auto entry = std::make_shared<Entry>();
  entry->id = req.session_id();
  entry->exact_every = ExactEvery(req.spec(), **session);
  entry->session = *std::move(session);
  entry->reserved_bytes = reserved->bytes();
  return entry;
}

absl::StatusOr<std::vector<v1::SessionInfo>> SessionManager::CreateAll(
    const std::vector<v1::CreateSessionRequest>& requests,
    const std::function<std::string(size_t)>& name, const PersistAll& persist) {
  std::vector<std::unique_ptr<Reservation>> reserved(requests.size());
  std::vector<std::shared_ptr<Entry>> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].session_id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(name(i), ": session_id: must be given"));
    }
    absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareCreate(requests[i], reserved[i]);
    if (!entry.ok()) return Named(name(i), entry.status());
    entries.push_back(*std::move(entry));
  }
  return InstallAll(std::move(entries), std::move(reserved), name, persist);
}

absl::StatusOr<std::vector<v1::SessionInfo>> SessionManager::ImportAll(
    const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
    const PersistAll& persist) {
  const auto name = [&](size_t i) { return absl::StrCat(field, "[", i, "]"); };
  std::vector<std::unique_ptr<Reservation>> reserved(requests.size());
  std::vector<std::shared_ptr<Entry>> entries;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<std::shared_ptr<Entry>> entry = PrepareImport(requests[i], reserved[i]);
    if (!entry.ok()) return Named(name(i), entry.status());
    entries.push_back(*std::move(entry));
  }
  return InstallAll(std::move(entries), std::move(reserved), name, persist);
}

absl::Status SessionManager::CheckSameProblem(const std::vector<std::shared_ptr<Entry>>& entries,
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

absl::Status SessionManager::Named(const std::string& name, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(name, ": ", s.message()));
}

absl::StatusOr<std::vector<v1::SessionInfo>> SessionManager::InstallAll(
    std::vector<std::shared_ptr<Entry>> entries, std::vector<std::unique_ptr<Reservation>> reserved,
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
    for (size_t i = 0; i < claimed; ++i) Unclaim(entries[i]->id);
  };
  for (; claimed < entries.size(); ++claimed) {
    if (absl::Status s = Claim(*entries[claimed], /*generate_id=*/false, /*check_fence=*/true);
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

}  // namespace f2obo::server
