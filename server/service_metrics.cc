#include "server/service_metrics.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace f2obo::server {
namespace {

// Registration happens once at start with fixed, valid names: a failure is
// a programming error, reported loudly.
template <typename T>
T* OrDie(absl::StatusOr<T*> r) {
  if (!r.ok()) {
    std::fprintf(stderr, "f2obo-server: metric registration: %s\n",
                 std::string(r.status().message()).c_str());
    std::abort();
  }
  return *r;
}

const char* CodeName(grpc::StatusCode c) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(c);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

}  // namespace

ServiceMetrics::ServiceMetrics(metrics::Registry* r, bool per_session_labels)
    : per_session_(per_session_labels) {
  const std::vector<double> rpc_buckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                           0.1,    0.25,  0.5,    1,     2.5,  10};
  requests_ =
      OrDie(r->AddCounter("f2obo_rpc_requests_total",
                          "gRPC requests handled, by method (Steps, StepsGroup: per message; "
                          "StepsOpen, StepsGroupOpen: per stream opened).",
                          {"method"}));
  errors_ = OrDie(r->AddCounter("f2obo_rpc_errors_total",
                                "gRPC requests that failed, by method and status code.",
                                {"method", "code"}));
  latency_ =
      OrDie(r->AddHistogram("f2obo_rpc_duration_seconds",
                            "Time to handle a gRPC request, by method.", {"method"}, rpc_buckets));
  in_flight_ = OrDie(
      r->AddGauge("f2obo_rpc_in_flight",
                  "gRPC handlers running now (a stream counts once per message being processed; an "
                  "open WatchMetrics counts while it waits).",
                  {}));
  in_flight_now_ = &in_flight_->WithLabels({});
  in_flight_now_->Set(0);  // exported from the start
  round_latency_ = OrDie(r->AddHistogram(
      "f2obo_round_duration_seconds",
      "Time of one optimization round (validation, prequential metrics, round).", {}, rpc_buckets));
  sessions_ = OrDie(r->AddGauge("f2obo_sessions", "Sessions held by the server.", {}));
  steps_ = OrDie(r->AddCounter("f2obo_steps_total", "Steps applied across all sessions.", {}));
  rows_ = OrDie(r->AddCounter("f2obo_rows_ingested_total",
                              "Sample rows read by rounds across all sessions.", {}));
  cap_hits_ = OrDie(r->AddCounter("f2obo_inner_cap_hits_total",
                                  "AF2OBO rounds that stopped an inner loop at its cap.", {}));
  exact_skipped_ = OrDie(r->AddCounter(
      "f2obo_exact_metrics_skipped_total",
      "Steps whose due exact metrics were skipped (worker behind or non-finite).", {}));
  exact_unconverged_ = OrDie(
      r->AddCounter("f2obo_exact_metrics_unconverged_total",
                    "Exact metrics published although one of their solves stopped short of its "
                    "tolerance (the step-t inner solve, the CG solve of the hypergradient, or the "
                    "step t-1 inner solve behind variation and drift); the affected terms are left "
                    "out of BLReg and the V_T, H_2,T estimates.",
                    {}));
  exact_unconverged_->WithLabels({});  // exported from the start, for rate()
  group_member_steps_ = OrDie(r->AddCounter(
      "f2obo_group_member_steps_total",
      "Member outcomes of group steps (StepGroup, StepsGroup), by the member's gRPC status "
      "code; a group step refused as a whole counts in f2obo_rpc_errors_total only.",
      {"code"}));
  // Exported from the start, so that rate() has a series before the first
  // group step.
  group_member_steps_->WithLabels({"OK"});
  undecodable_ = OrDie(r->AddCounter(
      "f2obo_undecodable_requests_total",
      "Request messages that could not be decoded (answered INVALID_ARGUMENT); a unary one "
      "never reaches its handler, so it is not in f2obo_rpc_requests_total.",
      {}));
  undecodable_->WithLabels({});
  rollbacks_ = OrDie(r->AddCounter(
      "f2obo_rollbacks_total",
      "Sessions rolled back to a checkpoint (RollbackSession calls that changed the state).", {}));
  rollbacks_->WithLabels({});
  forks_ = OrDie(r->AddCounter("f2obo_forks_total",
                               "Sessions created by ForkSession (also in f2obo_sessions).", {}));
  forks_->WithLabels({});
  const std::vector<std::string> s = {"session_id"};
  t_ = OrDie(r->AddGauge("f2obo_session_step", "Index t of the last applied step.", s));
  upper_loss_ = OrDie(r->AddGauge(
      "f2obo_session_prequential_loss",
      "Upper loss on the step's fresh batch before the round (bilevel: f_t(x_t, y_t); "
      "simple bilevel: f_t at the decision served; multi-task: the mean over the step's tasks).",
      s));
  exact_evaluated_ = OrDie(r->AddGauge(
      "f2obo_session_exact_evaluated_steps",
      "Due steps whose exact metrics were computed (RunningMetrics.evaluated_steps); with "
      "f2obo_session_exact_skipped_steps, the coverage of BLReg and the class's other sums.",
      s));
  exact_skipped_steps_ = OrDie(r->AddGauge(
      "f2obo_session_exact_skipped_steps",
      "Due steps without exact metrics: not in the random sample the metrics worker evaluates "
      "when it is behind, or failed (RunningMetrics.skipped_steps).",
      s));
  exact_probability_ = OrDie(
      r->AddGauge("f2obo_session_exact_probability",
                  "Probability p_t with which the last due step's exact metrics were computed: 1 "
                  "while the metrics worker keeps up, down to --min_exact_probability when it "
                  "is behind.",
                  s));
  hyperparameter_ = OrDie(r->AddGauge(
      "f2obo_session_hyperparameter",
      "The decision x_{t+1} of the last step by named group of its entries (SessionSpec.x_groups; "
      "an x of at most 16 entries without names: x[i]), each group's mean.",
      {"session_id", "name"}));
  for (const presentation::ClassPresentation* p : presentation::Presentations()) {
    classes_.emplace_back(p, p->new_series(r));
  }
  steps_total_ = &steps_->WithLabels({});
  rows_total_ = &rows_->WithLabels({});
  round_seconds_ = &round_latency_->WithLabels({});
}

ServiceMetrics::RpcSeries ServiceMetrics::RpcSeriesOf(const char* method) {
  const absl::string_view name(method);
  {
    absl::ReaderMutexLock lock(&rpc_mu_);
    if (const auto it = rpc_series_.find(name); it != rpc_series_.end()) return it->second;
  }
  const RpcSeries made{&requests_->WithLabels({method}), &latency_->WithLabels({method})};
  absl::MutexLock lock(&rpc_mu_);
  return rpc_series_.try_emplace(name, made).first->second;
}

void ServiceMetrics::OnRpc(const char* method, grpc::StatusCode code, double seconds) {
  const RpcSeries series = RpcSeriesOf(method);
  series.requests->Increment();
  if (code != grpc::StatusCode::OK) errors_->WithLabels({method, CodeName(code)}).Increment();
  series.latency->Observe(seconds);
}

void ServiceMetrics::OnGroupMemberStep(grpc::StatusCode code) {
  group_member_steps_->WithLabels({CodeName(code)}).Increment();
}
void ServiceMetrics::OnRollback(const std::string& id, int64_t to_t) {
  rollbacks_->WithLabels({}).Increment();
  if (!per_session_) return;
  absl::MutexLock lock(&series_mu_);
  if (!live_.contains(id)) return;
  const auto it = series_.find(id);
  metrics::Gauge& t = it != series_.end() ? *it->second.t : t_->WithLabels({id});
  t.Set(static_cast<double>(to_t));
}

void ServiceMetrics::OnFork(const std::string&) { forks_->WithLabels({}).Increment(); }

void ServiceMetrics::OnInFlight(int delta) { in_flight_now_->Add(delta); }
void ServiceMetrics::OnUndecodableRequest() { undecodable_->WithLabels({}).Increment(); }

void ServiceMetrics::OnSessionCreated(const std::string& id) {
  sessions_->WithLabels({}).Add(1);
  absl::MutexLock lock(&series_mu_);
  live_.insert(id);
}

void ServiceMetrics::OnStepMetrics(const v1::StepMetrics& m) {
  const v1::RoundReport& r = m.report();
  const presentation::ClassPresentation& of = presentation::PresentationOf(r);
  steps_total_->Increment();
  rows_total_->Increment(static_cast<double>(r.rows_processed()));
  round_seconds_->Observe(r.round_seconds());
  if (r.bilevel().cap_hit()) cap_hits_->WithLabels({}).Increment();  // af2obo's (bilevel)
  if (!m.exact_skipped_reason().empty()) exact_skipped_->WithLabels({}).Increment();
  if (m.has_exact() && !of.exact_converged(m.exact())) {
    exact_unconverged_->WithLabels({}).Increment();
  }
  if (!per_session_) return;
  absl::MutexLock lock(&series_mu_);
  if (!live_.contains(m.session_id())) return;
  const std::string& id = m.session_id();
  const auto [it, first] = series_.try_emplace(id);
  SessionSeries& series = it->second;
  if (first) {
    series.t = &t_->WithLabels({id});
    series.upper_loss = &upper_loss_->WithLabels({id});
  }
  series.t->Set(static_cast<double>(m.t()));
  series.upper_loss->Set(r.upper_loss_before());
  if (const v1::RunningMetrics* running = presentation::RunningOf(m)) {
    if (series.exact_evaluated == nullptr) {
      series.exact_evaluated = &exact_evaluated_->WithLabels({id});
      series.exact_skipped_steps = &exact_skipped_steps_->WithLabels({id});
    }
    series.exact_evaluated->Set(static_cast<double>(running->evaluated_steps()));
    series.exact_skipped_steps->Set(static_cast<double>(running->skipped_steps()));
  }
  if (m.exact_probability() > 0.0) {
    if (series.exact_probability == nullptr) {
      series.exact_probability = &exact_probability_->WithLabels({id});
    }
    series.exact_probability->Set(m.exact_probability());
  }
  // The step's hyperparameters, in the same order step after step: each
  // found at its place in the list kept from the last step, else looked up.
  auto& kept = series.hyperparameters;
  kept.resize(std::min<size_t>(kept.size(), m.hyperparameters_size()));
  for (int i = 0; i < m.hyperparameters_size(); ++i) {
    const v1::Hyperparameter& h = m.hyperparameters(i);
    const size_t at = static_cast<size_t>(i);
    if (at == kept.size()) {
      kept.emplace_back(h.name(), &hyperparameter_->WithLabels({id, h.name()}));
    } else if (kept[at].first != h.name()) {
      kept[at] = {h.name(), &hyperparameter_->WithLabels({id, h.name()})};
    }
    kept[at].second->Set(h.value());
  }
  for (auto& [p, class_series] : classes_) {
    if (p == &of) class_series->Update(id, m);
  }
}

void ServiceMetrics::OnSessionDeleted(const std::string& id) {
  sessions_->WithLabels({}).Add(-1);
  absl::MutexLock lock(&series_mu_);
  live_.erase(id);
  t_->Remove({id});
  upper_loss_->Remove({id});
  exact_evaluated_->Remove({id});
  exact_skipped_steps_->Remove({id});
  exact_probability_->Remove({id});
  if (const auto it = series_.find(id); it != series_.end()) {
    for (const auto& [name, gauge] : it->second.hyperparameters) {
      hyperparameter_->Remove({id, name});
    }
    series_.erase(it);
  }
  // A session's class is not known here: every class drops its series of
  // the id (a no-op for the others).
  for (auto& [p, class_series] : classes_) class_series->Remove(id);
}

}  // namespace f2obo::server
