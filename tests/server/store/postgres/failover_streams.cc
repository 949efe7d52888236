#include "tests/server/store/postgres/failover_streams.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/server/e2e_client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/oracle_classes_support.h"

namespace f2obo::testing {
namespace {

namespace oc = oracle_classes;

bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

// One step of an oracle session over `oracle` (opened on first use, and
// again after the stream broke): the reply, or why there is none.
absl::StatusOr<v1::StepReply> OracleStep(v1::F2obo::Stub* stub,
                                         std::unique_ptr<OracleClient>* oracle,
                                         const std::string& id, int64_t t, Answerer* answerer) {
  if (*oracle == nullptr) *oracle = std::make_unique<OracleClient>(stub, 120.0, id);
  const OracleOutcome o = (*oracle)->Step(id, t, answerer);
  if (o.reply.has_value()) return *o.reply;
  oracle->reset();  // the stream ended (Step closed it): a new one for a retry
  if (o.error.has_value()) {
    return absl::Status(static_cast<absl::StatusCode>(o.error->code()), o.error->message());
  }
  return client::FromGrpc(o.status);
}

}  // namespace

absl::StatusOr<std::vector<StreamCase>> FailoverStreams(const std::string& prefix, int n_builtin,
                                                        client::Client& probe) {
  const std::vector<FamilyCase> families = AllFamilyCases();
  const FamilyCase bilevel[] = {families[0], families[1],
                                families[2]};  // quadratic, ridge, logistic
  std::vector<StreamCase> out;
  for (int i = 0; i < n_builtin; ++i) {
    StreamCase c;
    c.id = absl::StrCat(prefix, "-", i);
    const int n = i / 3;
    if (i % 3 == 0) {
      const FamilyCase f = bilevel[n % 3];
      c.spec = SpecFor(f, "f2obo", 100 + i);
      c.spec.mutable_metrics()->set_exact_every(0);
      c.request = [f](const std::string& id, int64_t t) { return RequestFor(f, id, t); };
    } else if (i % 3 == 1) {
      c.spec = oc::MultitaskSpec();
      c.spec.set_seed(100 + i);
      c.request = &oc::TaskRequest;
    } else {
      c.spec = oc::SimpleSpec();
      c.spec.set_seed(100 + i);
      c.request = &oc::SimpleRequest;
    }
    out.push_back(std::move(c));
  }
  // The oracle session: the oracle twin of a built-in logistic session,
  // answered by the client with that family on the same batches.
  const FamilyCase f = bilevel[2];
  v1::SessionSpec builtin = SpecFor(f, "f2obo", 7);
  v1::CreateSessionRequest twin;
  twin.set_session_id(prefix + "-oracle-dims");
  *twin.mutable_spec() = builtin;
  absl::StatusOr<v1::SessionInfo> info = probe.CreateSession(twin);
  if (!info.ok()) return info.status();
  if (absl::Status s = probe.DeleteSession(twin.session_id()); !s.ok()) return s;
  StreamCase o;
  o.id = prefix + "-oracle";
  o.spec = oc::OracleTwin(builtin, *info);
  // Step sizes given: the automatic ones need Hessian-vector products,
  // which an oracle does not answer.
  o.spec.mutable_options()->set_alpha(0.1);
  o.spec.mutable_options()->set_beta(0.5);
  o.answerer = [f]() -> std::unique_ptr<Answerer> { return std::make_unique<FamilyAnswerer>(f); };
  out.push_back(std::move(o));
  return out;
}

StreamRun::StreamRun(std::vector<StreamCase> cases, std::function<std::string(int)> target_of,
                     int64_t steps)
    : cases_(std::move(cases)),
      target_of_(std::move(target_of)),
      steps_(steps),
      results_(cases_.size()),
      ended_(cases_.size(), false) {}

StreamRun::~StreamRun() { Join(); }

absl::Status StreamRun::CreateSessions() {
  for (size_t i = 0; i < cases_.size(); ++i) {
    client::ClientOptions opt{target_of_(static_cast<int>(i))};
    client::Client c(opt);
    v1::CreateSessionRequest req;
    req.set_session_id(cases_[i].id);
    *req.mutable_spec() = cases_[i].spec;
    if (absl::StatusOr<v1::SessionInfo> info = c.CreateSession(req); !info.ok()) {
      return absl::Status(info.status().code(),
                          absl::StrCat(cases_[i].id, ": ", info.status().message()));
    }
  }
  return absl::OkStatus();
}

void StreamRun::Start() {
  for (size_t i = 0; i < cases_.size(); ++i) {
    threads_.emplace_back([this, i] { Drive(static_cast<int>(i)); });
  }
}

void StreamRun::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void StreamRun::Drive(int i) {
  const StreamCase& c = cases_[i];
  const std::string target = target_of_(i);
  // One attempt per call: this loop retries, so that it sees every refusal.
  client::ClientOptions opt{target};
  opt.max_attempts = 1;
  opt.rpc_timeout_seconds = 30;
  client::Client client(opt);
  // The oracle stream's channel adds no routing header of its own
  // (OracleClient sends it).
  auto stub = v1::F2obo::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  std::unique_ptr<Answerer> answerer = c.answerer ? c.answerer() : nullptr;
  std::unique_ptr<OracleClient> oracle;
  std::string failure;
  for (int64_t t = 1; t <= steps_ && failure.empty() && !stop_; ++t) {
    // A client's retry schedule (not a wait for an event): 10 ms doubling
    // to 200 ms, for at most a minute per step.
    auto backoff = std::chrono::milliseconds(10);
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(60);
    while (true) {
      const Clock::time_point sent = Clock::now();
      absl::StatusOr<v1::StepReply> reply =
          c.request ? client.Step(c.request(c.id, t))
                    : OracleStep(stub.get(), &oracle, c.id, t, answerer.get());
      if (reply.ok()) {
        if (reply->t() != t) {
          failure = absl::StrCat("step ", t, " answered t = ", reply->t());
          break;
        }
        std::lock_guard<std::mutex> lock(mu_);
        results_[i].acks.push_back(Ack{*std::move(reply), sent, Clock::now()});
        ++total_;
        changed_.notify_all();
        break;
      }
      if (!absl::IsUnavailable(reply.status()) || Clock::now() > give_up) {
        failure = absl::StrCat("step ", t, ": ", reply.status().ToString());
        break;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++results_[i].refused;
        changed_.notify_all();
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
    }
  }
  if (oracle != nullptr) (void)oracle->Close();
  std::lock_guard<std::mutex> lock(mu_);
  results_[i].failure = failure;
  ended_[i] = true;
  changed_.notify_all();
}

template <typename Done>
bool StreamRun::Await(Done done, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return done() || !FailureLocked().empty(); });
  return done() && FailureLocked().empty();
}

std::string StreamRun::FailureLocked() const {
  for (size_t i = 0; i < results_.size(); ++i) {
    if (!results_[i].failure.empty()) return cases_[i].id + ": " + results_[i].failure;
  }
  return "";
}

std::string StreamRun::Failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return FailureLocked();
}

int64_t StreamRun::AwaitTotal(int64_t total, std::chrono::milliseconds timeout) {
  Await(
      [&] {
        return total_ >= total ||
               std::all_of(ended_.begin(), ended_.end(), [](bool e) { return e; });
      },
      timeout);
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

std::vector<int64_t> StreamRun::Acknowledged() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int64_t> out;
  for (const StreamResult& r : results_) out.push_back(static_cast<int64_t>(r.acks.size()));
  return out;
}

std::vector<int> StreamRun::Refused() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> out;
  for (const StreamResult& r : results_) out.push_back(r.refused);
  return out;
}

bool StreamRun::AwaitEachBeyond(const std::vector<int64_t>& since,
                                std::chrono::milliseconds timeout) {
  return Await(
      [&] {
        for (size_t i = 0; i < results_.size(); ++i) {
          if (!ended_[i] && static_cast<int64_t>(results_[i].acks.size()) <= since[i]) return false;
        }
        return true;
      },
      timeout);
}

bool StreamRun::AwaitEachRefused(const std::vector<int>& since, std::chrono::milliseconds timeout) {
  return Await(
      [&] {
        for (size_t i = 0; i < results_.size(); ++i) {
          if (!ended_[i] && results_[i].refused <= since[i]) return false;
        }
        return true;
      },
      timeout);
}

absl::StatusOr<Checkpoint> ExportedState(client::Client& c, const std::string& id) {
  grpc::Status status;
  const v1::SessionExport ex = ExportSession(c, id, &status);
  if (!status.ok()) return client::FromGrpc(status);
  return DeserializeCheckpoint(ex.state());
}

absl::StatusOr<Reference> RunReference(client::Client& c, const std::vector<StreamCase>& cases,
                                       int64_t steps) {
  Reference ref;
  auto stub = v1::F2obo::NewStub(c.channel());
  for (const StreamCase& s : cases) {
    v1::CreateSessionRequest req;
    req.set_session_id(s.id);
    *req.mutable_spec() = s.spec;
    if (absl::StatusOr<v1::SessionInfo> info = c.CreateSession(req); !info.ok()) {
      return info.status();
    }
    std::unique_ptr<Answerer> answerer = s.answerer ? s.answerer() : nullptr;
    std::unique_ptr<OracleClient> oracle;
    std::vector<v1::StepReply> replies;
    for (int64_t t = 1; t <= steps; ++t) {
      absl::StatusOr<v1::StepReply> reply =
          s.request ? c.Step(s.request(s.id, t))
                    : OracleStep(stub.get(), &oracle, s.id, t, answerer.get());
      if (!reply.ok()) {
        return absl::Status(reply.status().code(),
                            absl::StrCat(s.id, " step ", t, ": ", reply.status().message()));
      }
      replies.push_back(*std::move(reply));
    }
    if (oracle != nullptr) (void)oracle->Close();
    absl::StatusOr<Checkpoint> state = ExportedState(c, s.id);
    if (!state.ok()) return state.status();
    ref.replies.push_back(std::move(replies));
    ref.states.push_back(*std::move(state));
  }
  return ref;
}

std::string CompareWithReference(const StreamRun& run, const Reference& ref,
                                 const std::function<std::string(int)>& target_of) {
  std::string out;
  for (size_t i = 0; i < run.cases().size(); ++i) {
    client::Client c(client::ClientOptions{target_of(static_cast<int>(i))});
    const std::string& id = run.cases()[i].id;
    const StreamResult& r = run.results()[i];
    if (!r.failure.empty()) absl::StrAppend(&out, id, " did not finish: ", r.failure, "\n");
    for (size_t k = 0; k < r.acks.size() && k < ref.replies[i].size(); ++k) {
      if (!SameBits(r.acks[k].reply.x(), ref.replies[i][k].x())) {
        absl::StrAppend(&out, id, " step ", k + 1, ": x differs from the fault-free run\n");
      }
    }
    absl::StatusOr<Checkpoint> state = ExportedState(c, id);
    if (!state.ok()) {
      absl::StrAppend(&out, id, ": export: ", state.status().ToString(), "\n");
    } else if (state->state.t != run.steps() + 1) {
      absl::StrAppend(&out, id, ": stored at t = ", state->state.t, ", not ", run.steps() + 1,
                      " (steps lost or applied twice)\n");
    } else if (!state->state.BitEquals(ref.states[i].state)) {
      absl::StrAppend(&out, id, ": final state differs from the fault-free run\n");
    }
  }
  return out;
}

}  // namespace f2obo::testing
