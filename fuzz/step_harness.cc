#include "fuzz/step_harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/bilevel_state.h"
#include "core/session.h"
#include "core/state.h"
#include "f2obo/v1/convert.h"
#include "server/metrics_pipeline.h"

namespace f2obo::fuzz {
namespace {

constexpr char kId[] = "fuzz";

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "\n==f2obo fuzz== INVARIANT FAILED: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond, ...)                                                      \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      Fail(absl::StrCat(__FILE__, ":", __LINE__, ": ", #cond, ": ", __VA_ARGS__)); \
    }                                                                              \
  } while (false)

// The largest magnitude among a constraint set's finite numbers.
double ConstraintScale(const ConstraintSet& set) {
  double m = std::abs(set.radius);
  for (const Vector* v : {&set.lo, &set.hi, &set.center}) {
    for (Eigen::Index i = 0; i < v->size(); ++i) {
      if (std::isfinite((*v)[i])) m = std::max(m, std::abs((*v)[i]));
    }
  }
  return m;
}

void CheckInsideX(const ConstraintSet& set, const Vector& x, const char* when) {
  const double scale = ConstraintScale(set) + (x.size() > 0 ? x.cwiseAbs().maxCoeff() : 0.0);
  if (!(scale < 1e150)) return;  // norms may overflow: nothing meaningful to check
  const double tol = 1e-9 * (1.0 + scale);
  FUZZ_CHECK(set.Contains(x, tol), when, ": x left the constraint set X");
}

// Every number of a session's state is finite and within the safe
// magnitude (Restore and the store rely on it).
void CheckStateInRange(const Session& session, const SessionState& s, const char* when) {
  const std::string field = s.FirstOutOfRange(session.problem().layout(), kMaxStateMagnitude);
  FUZZ_CHECK(field.empty(), when, ": the state's ", field,
             " is not finite or beyond the safe magnitude (t = ", s.t, ")");
}

// The checkpoint encoding round trip and Session::Restore, as the store
// does after every acknowledged step and at recovery.
void CheckDurable(const Session& session) {
  const std::string bytes = session.Encode(session.state());
  absl::StatusOr<Checkpoint> back = DeserializeCheckpoint(bytes);
  FUZZ_CHECK(back.ok(), "DeserializeCheckpoint(Encode(state)): ", back.status().ToString());
  FUZZ_CHECK(back->state.BitEquals(session.state()),
             "the state did not survive its encoding bit-exactly");
  absl::StatusOr<std::unique_ptr<Session>> restored =
      Session::Restore(session.config(), *std::move(back));
  FUZZ_CHECK(restored.ok(),
             "Session::Restore of a committed state: ", restored.status().ToString());
}

void CheckExactMetrics(const ExactMetrics& m) {
  FUZZ_CHECK(std::isfinite(m.regret_term) && std::isfinite(m.hypergradient_error) &&
                 std::isfinite(m.value) && std::isfinite(m.true_gradient_norm) &&
                 std::isfinite(m.inner_residual) &&
                 (!m.variation.has_value() || std::isfinite(*m.variation)) &&
                 (!m.drift.has_value() || std::isfinite(*m.drift)),
             "ComputeExactMetrics returned OK with a non-finite metric: regret_term ",
             m.regret_term, ", hypergradient_error ", m.hypergradient_error, ", value ", m.value,
             ", true_gradient_norm ", m.true_gradient_norm, ", inner_residual ", m.inner_residual,
             ", variation ", m.variation.value_or(0.0), ", drift ", m.drift.value_or(0.0));
}

struct Input {
  uint8_t mode = 0;
  v1::SessionSpec spec;
  std::optional<v1::SessionExport> exported;  // import mode
  v1::StepRequest step;
};

bool Parse(const uint8_t* data, size_t size, Input* in) {
  if (size < 3) return false;
  in->mode = data[0];
  const size_t n = std::min<size_t>(data[1] | (static_cast<size_t>(data[2]) << 8), size - 3);
  const uint8_t* first = data + 3;
  const uint8_t* rest = first + n;
  const int rest_size = static_cast<int>(size - 3 - n);
  if (in->mode & kImport) {
    v1::SessionExport ex;
    if (!ex.ParseFromArray(first, static_cast<int>(n))) return false;
    in->exported = std::move(ex);
  } else if (!in->spec.ParseFromArray(first, static_cast<int>(n))) {
    return false;
  }
  return in->step.ParseFromArray(rest, rest_size);
}

// The manager's current state of the fuzz session, as its export holds it.
std::string ManagerState(const server::SessionManager& mgr) {
  absl::StatusOr<v1::SessionExport> ex = mgr.Export(kId);
  FUZZ_CHECK(ex.ok(), "Export of the live fuzz session: ", ex.status().ToString());
  return ex->state();
}

// One round on the core twin, checked.  Returns the report of an applied round.
absl::StatusOr<StepReport> TwinRound(Session& session, const StepData& data, bool two_phase) {
  const SessionState before = session.state();
  absl::StatusOr<StepReport> report;
  if (!two_phase) {
    report = session.Step(data);
  } else {
    absl::StatusOr<StepReport> first = session.Prepare(data);
    FUZZ_CHECK(session.state().BitEquals(before), "Prepare changed the current state");
    std::optional<SessionState> pending;
    if (first.ok()) pending = session.pending_state();
    session.Abort();
    session.Commit();  // nothing pending after Abort: must be a no-op
    FUZZ_CHECK(session.state().BitEquals(before), "Commit after Abort changed the state");
    report = session.Prepare(data);
    FUZZ_CHECK(report.ok() == first.ok(),
               "two Prepares from one state disagree: ", first.status().ToString(), " vs ",
               report.status().ToString());
    if (report.ok()) {
      FUZZ_CHECK(session.pending_state().BitEquals(*pending),
                 "two Prepares from one state produced different states (t = ", before.t, ")");
      session.Commit();
    }
  }
  if (!report.ok()) {
    FUZZ_CHECK(session.state().BitEquals(before),
               "a refused round changed the state (t = ", before.t,
               "): ", report.status().ToString());
    return report;
  }
  const SessionState& after = session.state();
  FUZZ_CHECK(after.t == before.t + 1, "t went from ", before.t, " to ", after.t);
  FUZZ_CHECK(report->t == before.t, "the report names step ", report->t, ", not ", before.t);
  CheckStateInRange(session, after, "after an applied round");
  CheckInsideX(session.config().constraint, after.x, "after an applied round");
  return report;
}

bool SameDoubles(const google::protobuf::RepeatedField<double>& a, const Vector& b) {
  if (a.size() != b.size()) return false;
  for (int i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(double)) != 0) return false;
  }
  return true;
}

// The server's metrics pipeline: one worker, created once (no sessions
// outlive an input).  Exact metrics are off on the manager's sessions (they
// would run asynchronously); the harness computes them synchronously.
server::MetricsPipeline& Pipeline() {
  static server::MetricsPipeline* pipeline = new server::MetricsPipeline(1, 16, nullptr);
  return *pipeline;
}

// Opens the fuzz session in the manager (Create or Import) and its core twin.
// Returns null (with `error` set) when the manager refuses.
std::unique_ptr<Session> Open(Input& in, server::SessionManager& mgr, std::string* error) {
  absl::StatusOr<v1::SessionInfo> info;
  v1::SessionSpec* spec = nullptr;
  if (!in.exported.has_value()) {
    v1::CreateSessionRequest req;
    req.set_session_id(kId);
    in.spec.mutable_metrics()->set_exact_every(0);
    *req.mutable_spec() = in.spec;
    spec = &in.spec;
    info = mgr.Create(req);
  } else {
    v1::ImportSessionRequest req;
    req.set_session_id(kId);
    v1::SessionExport& ex = *in.exported;
    ex.mutable_spec()->mutable_metrics()->set_exact_every(0);
    if (in.mode & kFixChecksum) FixStateChecksum(ex.mutable_state());
    *req.mutable_session() = ex;
    spec = ex.mutable_spec();
    info = mgr.Import(req);
  }
  if (!info.ok()) {
    *error = std::string(info.status().message());
    return nullptr;
  }
  FUZZ_CHECK(info->session_id() == kId, "the manager named the session ", info->session_id());
  // What the manager accepted, the core accepts too.  An imported spec is
  // read as the manager reads it: options it does not name resume as they
  // ran before they existed (lambda_schedule, inner_step_growth).
  absl::StatusOr<SessionConfig> config = ToSessionConfig(
      *spec, in.exported.has_value() ? UnreadOptions::kDrop : UnreadOptions::kRefuse);
  FUZZ_CHECK(config.ok(), "an accepted spec does not convert: ", config.status().ToString());
  absl::StatusOr<std::unique_ptr<Session>> twin;
  if (!in.exported.has_value()) {
    twin = Session::Create(*config);
  } else {
    absl::StatusOr<Checkpoint> state = DeserializeCheckpoint(in.exported->state());
    FUZZ_CHECK(state.ok(), "an imported state does not decode: ", state.status().ToString());
    // A decodable record re-encodes to exactly its bytes, or, written by an
    // older version, to a current record of the same state.
    const std::string again = SerializeCheckpoint(*state);
    if (again.compare(4, 8, in.exported->state(), 4, 8) == 0) {
      FUZZ_CHECK(again == in.exported->state(), "a decoded state re-encodes differently");
    } else {
      absl::StatusOr<Checkpoint> back = DeserializeCheckpoint(again);
      FUZZ_CHECK(back.ok() && back->BitEquals(*state),
                 "an older state record re-encodes to a different state");
    }
    twin = Session::Restore(*config, *std::move(state));
  }
  FUZZ_CHECK(twin.ok(),
             "the manager accepted a session the core refuses: ", twin.status().ToString());
  FUZZ_CHECK(ManagerState(mgr) == (*twin)->Encode((*twin)->state()),
             "the manager's new session differs from its core twin");
  FUZZ_CHECK(info->next_t() == (*twin)->state().t, "next_t ", info->next_t(), " vs twin t ",
             (*twin)->state().t);
  return *std::move(twin);
}

}  // namespace

server::Limits FuzzLimits() {
  server::Limits l;
  l.max_sessions = 4;
  l.max_batch_rows = 128;
  l.max_batch_cols = 128;
  l.max_batch_nnz = 16384;
  l.max_y_dim = 1024;
  l.reply_cache = 4;
  l.max_inner_iterations = 50;
  return l;
}

void FixStateChecksum(std::string* state) { ResealEncodedState(state); }

std::string EncodeInput(uint8_t mode, const google::protobuf::MessageLite& first,
                        const v1::StepRequest& step) {
  const std::string a = first.SerializeAsString();
  if (a.size() > 0xffff) return "";
  std::string out;
  out.push_back(static_cast<char>(mode));
  out.push_back(static_cast<char>(a.size() & 0xff));
  out.push_back(static_cast<char>(a.size() >> 8));
  out += a;
  out += step.SerializeAsString();
  return out;
}

Result RunInput(const uint8_t* data, size_t size) {
  Result result;
  Input in;
  if (!Parse(data, size, &in)) return result;
  result.outcome = Outcome::kConfigRefused;

  if (in.mode & kRawDecode) {
    // The decoder alone must cope with anything (its allocations are
    // bounded by the message's own arrays).
    (void)ToBatch(in.step.upper(), "upper");
    (void)ToBatch(in.step.inner(), "inner");
  }

  server::SessionManager mgr(FuzzLimits(), &Pipeline(), /*store=*/nullptr);
  std::unique_ptr<Session> twin = Open(in, mgr, &result.first_error);
  if (twin == nullptr) return result;
  Session& session = *twin;
  // A session that exists holds a usable state: finite (Restore and the
  // store rely on it) and, before any round, x in X.
  CheckStateInRange(session, session.state(), "a new session");
  if (!in.exported.has_value()) {
    CheckInsideX(session.config().constraint, session.state().x, "a new session");
  }
  result.outcome = Outcome::kStepRefused;

  // The manager's decoder and batch limits.
  absl::StatusOr<std::shared_ptr<const StepData>> decoded =
      mgr.Decode(in.step.upper(), in.step.inner(), in.step.tasks());

  std::unique_ptr<BilevelFamily> metrics_family;
  if (decoded.ok() && (in.mode & kExactMetrics) &&
      session.problem_class() == ProblemClass::kBilevel) {
    absl::StatusOr<std::unique_ptr<BilevelFamily>> f = CreateBilevelFamily(session.config().family);
    FUZZ_CHECK(f.ok(), "the metrics family of a valid session: ", f.status().ToString());
    metrics_family = *std::move(f);
  }
  // Other classes: the class's own evaluator, as the server's worker builds it.
  std::unique_ptr<MetricsEvaluator> class_evaluator;
  if (decoded.ok() && (in.mode & kExactMetrics) &&
      session.problem_class() != ProblemClass::kBilevel) {
    absl::StatusOr<std::unique_ptr<MetricsEvaluator>> e = session.problem().NewMetricsEvaluator();
    FUZZ_CHECK(e.ok(), "the metrics evaluator of a valid session: ", e.status().ToString());
    class_evaluator = *std::move(e);
  }
  ExactMetricsOptions metrics_options;  // fewer iterations than the server: speed
  metrics_options.max_newton_iterations = 8;
  metrics_options.max_cg_iterations = 64;

  const int rounds = 1 + (in.mode & kRoundsMask);
  bool have_previous = false;
  for (int r = 0; r < rounds; ++r) {
    const SessionState before = session.state();
    const std::string before_bytes = ManagerState(mgr);
    v1::StepRequest req = in.step;
    req.set_session_id(kId);
    req.set_t(before.t);
    absl::StatusOr<v1::StepReply> reply = mgr.Step(req);

    if (!decoded.ok()) {
      FUZZ_CHECK(!reply.ok() && reply.status().code() == decoded.status().code(),
                 "Step and Decode disagree on a batch: ", reply.status().ToString(), " vs ",
                 decoded.status().ToString());
      FUZZ_CHECK(ManagerState(mgr) == before_bytes, "a refused step changed the state");
      ++result.rounds_refused;
      if (result.first_error.empty()) result.first_error = std::string(decoded.status().message());
      continue;
    }
    const StepData& step = **decoded;
    absl::StatusOr<StepReport> report = TwinRound(session, step, (in.mode & kTwoPhase) != 0);
    FUZZ_CHECK(reply.ok() == report.ok(),
               "the manager and its core twin disagree: ", reply.status().ToString(), " vs ",
               report.status().ToString());
    if (!report.ok()) {
      FUZZ_CHECK(ManagerState(mgr) == before_bytes,
                 "a refused step changed the state: ", reply.status().ToString());
      ++result.rounds_refused;
      if (result.first_error.empty()) result.first_error = std::string(report.status().message());
      continue;
    }
    ++result.rounds_applied;
    result.outcome = Outcome::kApplied;
    FUZZ_CHECK(!reply->replayed() && reply->t() == before.t, "reply for t = ", reply->t());
    FUZZ_CHECK(SameDoubles(reply->x(), session.decision()),
               "the reply's x differs from the core twin's");
    const std::string after_bytes = ManagerState(mgr);
    FUZZ_CHECK(after_bytes == session.Encode(session.state()),
               "the manager's state differs from its core twin's after step ", before.t);

    // Exactly once: a retry is answered from the cache, an index ahead refused.
    absl::StatusOr<v1::StepReply> again = mgr.Step(req);
    FUZZ_CHECK(again.ok() && again->replayed(), "a retry of step ", before.t, ": ",
               again.status().ToString());
    FUZZ_CHECK(SameDoubles(again->x(), session.decision()), "a retry's x differs");
    req.set_t(before.t + 2);
    absl::StatusOr<v1::StepReply> ahead = mgr.Step(req);
    FUZZ_CHECK(ahead.status().code() == absl::StatusCode::kFailedPrecondition,
               "an index ahead: ", ahead.status().ToString());
    FUZZ_CHECK(ManagerState(mgr) == after_bytes, "a retry or an index ahead changed the state");

    CheckDurable(session);
    if (metrics_family != nullptr) {
      // What the server's metrics worker computes for this step.
      MetricsInput mi;
      mi.t = before.t;
      mi.x = before.x;
      mi.y = BilevelView(before).y;
      mi.h = BilevelPart(*report).hypergradient;
      mi.gamma = session.config().options.gamma;
      absl::StatusOr<ExactMetrics> m =
          ComputeExactMetrics(*metrics_family, session.config().constraint, mi, step,
                              have_previous ? &step : nullptr, metrics_options);
      // (Not accumulated into the twin: the manager's sessions have exact
      // metrics off, and the twin must stay bit-identical to them.)
      if (m.ok()) CheckExactMetrics(*m);
      have_previous = true;
    }
    if (class_evaluator != nullptr) {
      class_evaluator->Observe(step);
      absl::StatusOr<ClassMetrics> m = class_evaluator->Evaluate(before, *report, step, nullptr);
      // Non-finite results are refused (the worker skips the step); what
      // is published must be finite, and an inner gap is never negative.
      if (m.ok() && std::holds_alternative<SimpleMetrics>(*m)) {
        const SimpleMetrics& sm = std::get<SimpleMetrics>(*m);
        FUZZ_CHECK(std::isfinite(sm.f) && std::isfinite(sm.g) && std::isfinite(sm.inner_gap),
                   "simple metrics not finite");
        FUZZ_CHECK(sm.inner_gap >= 0.0, "negative inner gap ", sm.inner_gap);
      }
    }
  }
  absl::Status deleted = mgr.Delete(kId);
  FUZZ_CHECK(deleted.ok(), "Delete of the fuzz session: ", deleted.ToString());
  return result;
}

}  // namespace f2obo::fuzz
