#include "server/service_metrics.h"

#include <cstdlib>
#include <cstdio>
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
  static const char* const kNames[] = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
      "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
      "UNAUTHENTICATED"};
  const int i = static_cast<int>(c);
  return i >= 0 && i <= 16 ? kNames[i] : "UNKNOWN";
}

}  // namespace

ServiceMetrics::ServiceMetrics(metrics::Registry* r, bool per_session_labels)
    : per_session_(per_session_labels) {
  const std::vector<double> rpc_buckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                           0.05,   0.1,   0.25,   0.5,   1,    2.5, 10};
  requests_ = OrDie(r->AddCounter("f2obo_rpc_requests_total",
                                  "gRPC requests handled, by method (Steps, StepsGroup: per message; "
                                  "StepsOpen, StepsGroupOpen: per stream opened).",
                                  {"method"}));
  errors_ = OrDie(r->AddCounter("f2obo_rpc_errors_total",
                                "gRPC requests that failed, by method and status code.",
                                {"method", "code"}));
  latency_ = OrDie(r->AddHistogram("f2obo_rpc_duration_seconds",
                                   "Time to handle a gRPC request, by method.", {"method"},
                                   rpc_buckets));
  in_flight_ = OrDie(r->AddGauge(
      "f2obo_rpc_in_flight",
      "gRPC handlers running now (a stream counts once per message being processed; an "
      "open WatchMetrics counts while it waits).",
      {}));
  in_flight_->WithLabels({}).Set(0);  // exported from the start
  round_latency_ = OrDie(r->AddHistogram(
      "f2obo_round_duration_seconds",
      "Time of one optimization round (validation, prequential metrics, round).", {},
      rpc_buckets));
  sessions_ = OrDie(r->AddGauge("f2obo_sessions", "Sessions held by the server.", {}));
  steps_ = OrDie(r->AddCounter("f2obo_steps_total", "Steps applied across all sessions.", {}));
  rows_ = OrDie(r->AddCounter("f2obo_rows_ingested_total",
                              "Sample rows read by rounds across all sessions.", {}));
  cap_hits_ = OrDie(r->AddCounter("f2obo_inner_cap_hits_total",
                                  "AF2OBO rounds that stopped an inner loop at its cap.", {}));
  exact_skipped_ = OrDie(r->AddCounter(
      "f2obo_exact_metrics_skipped_total",
      "Steps whose due exact metrics were skipped (worker behind or non-finite).", {}));
  exact_unconverged_ = OrDie(r->AddCounter(
      "f2obo_exact_metrics_unconverged_total",
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
      "Sessions rolled back to a checkpoint (RollbackSession calls that changed the state).",
      {}));
  rollbacks_->WithLabels({});
  forks_ = OrDie(r->AddCounter("f2obo_forks_total",
                               "Sessions created by ForkSession (also in f2obo_sessions).", {}));
  forks_->WithLabels({});
  const std::vector<std::string> s = {"session_id"};
  t_ = OrDie(r->AddGauge("f2obo_session_step", "Index t of the last applied step.", s));
  blreg_ = OrDie(r->AddGauge("f2obo_session_blreg",
                             "Cumulative local regret BLReg(t) over evaluated steps (Eq. 2).", s));
  regret_term_ = OrDie(r->AddGauge(
      "f2obo_session_regret_term",
      "Last local-regret term ||G_X(x_t, grad F_t(x_t), gamma)||^2.", s));
  hypergradient_error_ = OrDie(r->AddGauge(
      "f2obo_session_hypergradient_error",
      "Last ||h_t - grad F_t(x_t)||, the algorithm's hypergradient error.", s));
  variation_ = OrDie(r->AddGauge(
      "f2obo_session_variation_estimate",
      "Running sum of |F_t(x_t) - F_{t-1}(x_t)|: trajectory estimate of V_T.", s));
  drift_ = OrDie(r->AddGauge(
      "f2obo_session_drift_estimate",
      "Running sum of ||y*_t(x_t) - y*_{t-1}(x_t)||^2: trajectory estimate of H_2,T.", s));
  lambda_ = OrDie(r->AddGauge("f2obo_session_lambda", "Multiplier lambda_t of the last round.", s));
  inner_iterations_ = OrDie(r->AddGauge("f2obo_session_inner_iterations",
                                        "Inner gradient steps (z plus y) of the last round.", s));
  value_ = OrDie(r->AddGauge("f2obo_session_objective",
                             "F_t(x_t) at the last evaluated step.", s));
  upper_loss_ = OrDie(r->AddGauge(
      "f2obo_session_prequential_loss",
      "Upper loss on the step's fresh batch before the round (bilevel: f_t(x_t, y_t); "
      "simple bilevel: f_t at the decision served).", s));
  // The simple bilevel class's gaps (SPEC section 9.2), on the session's
  // most recent rows.
  simple_inner_gap_ = OrDie(r->AddGauge(
      "f2obo_simple_session_inner_gap",
      "Simple bilevel: inner optimality gap g(decision) - g* at the last evaluated step.", s));
  simple_outer_gap_ = OrDie(r->AddGauge(
      "f2obo_simple_session_outer_gap",
      "Simple bilevel: outer gap f(decision) - f* at the last evaluated step whose f* the "
      "family computes (may be negative: the decision need not be inner-optimal).", s));
  simple_fw_gap_ = OrDie(r->AddGauge(
      "f2obo_simple_session_fw_gap",
      "Simple bilevel: Frank-Wolfe gap max_s <grad g(decision), decision - s>, an upper "
      "bound on the inner gap (sets with an LMO).", s));
  simple_inner_gap_sum_ = OrDie(r->AddGauge(
      "f2obo_simple_session_inner_gap_cumulative",
      "Simple bilevel: sum of converged inner gaps over evaluated steps.", s));
  simple_outer_gap_sum_ = OrDie(r->AddGauge(
      "f2obo_simple_session_outer_gap_cumulative",
      "Simple bilevel: sum of outer gaps over evaluated steps with an f*.", s));
  simple_objective_ = OrDie(r->AddGauge(
      "f2obo_simple_session_objective",
      "Simple bilevel: f(decision) on the recent upper rows at the last evaluated step.", s));
  simple_inner_objective_ = OrDie(r->AddGauge(
      "f2obo_simple_session_inner_objective",
      "Simple bilevel: g(decision) on the recent inner rows at the last evaluated step.", s));
}

namespace {

// Whether every solve behind a step's exact metrics met its tolerance.
bool ExactConverged(const v1::ExactMetrics& e) {
  if (e.has_simple()) return e.simple().g_star_converged();
  return e.inner_converged() && e.cg_converged() &&
         (!e.has_previous_inner_converged() || e.previous_inner_converged());
}

}  // namespace

void ServiceMetrics::OnRpc(const char* method, grpc::StatusCode code, double seconds) {
  requests_->WithLabels({method}).Increment();
  if (code != grpc::StatusCode::OK) errors_->WithLabels({method, CodeName(code)}).Increment();
  latency_->WithLabels({method}).Observe(seconds);
}

void ServiceMetrics::OnGroupMemberStep(grpc::StatusCode code) {
  group_member_steps_->WithLabels({CodeName(code)}).Increment();
}
void ServiceMetrics::OnRollback(const std::string& id, int64_t to_t) {
  rollbacks_->WithLabels({}).Increment();
  if (!per_session_) return;
  std::lock_guard<std::mutex> lock(series_mu_);
  if (live_.contains(id)) t_->WithLabels({id}).Set(static_cast<double>(to_t));
}

void ServiceMetrics::OnFork(const std::string&) { forks_->WithLabels({}).Increment(); }

void ServiceMetrics::OnInFlight(int delta) { in_flight_->WithLabels({}).Add(delta); }
void ServiceMetrics::OnUndecodableRequest() { undecodable_->WithLabels({}).Increment(); }

void ServiceMetrics::OnSessionCreated(const std::string& id) {
  sessions_->WithLabels({}).Add(1);
  std::lock_guard<std::mutex> lock(series_mu_);
  live_.insert(id);
}

void ServiceMetrics::OnStepMetrics(const v1::StepMetrics& m) {
  const v1::RoundReport& r = m.report();
  steps_->WithLabels({}).Increment();
  rows_->WithLabels({}).Increment(static_cast<double>(r.rows_processed()));
  round_latency_->WithLabels({}).Observe(r.round_seconds());
  if (r.cap_hit()) cap_hits_->WithLabels({}).Increment();
  if (!m.exact_skipped_reason().empty()) exact_skipped_->WithLabels({}).Increment();
  if (m.has_exact() && !ExactConverged(m.exact())) exact_unconverged_->WithLabels({}).Increment();
  if (!per_session_) return;
  std::lock_guard<std::mutex> lock(series_mu_);
  if (!live_.contains(m.session_id())) return;
  const std::vector<std::string> id = {m.session_id()};
  t_->WithLabels(id).Set(static_cast<double>(m.t()));
  upper_loss_->WithLabels(id).Set(r.upper_loss_before());
  if (r.has_simple()) {
    if (m.has_exact()) {
      const v1::SimpleExactMetrics& e = m.exact().simple();
      simple_inner_gap_->WithLabels(id).Set(e.inner_gap());
      if (e.has_outer_gap()) simple_outer_gap_->WithLabels(id).Set(e.outer_gap());
      if (e.has_fw_gap()) simple_fw_gap_->WithLabels(id).Set(e.fw_gap());
      simple_objective_->WithLabels(id).Set(e.f());
      simple_inner_objective_->WithLabels(id).Set(e.g());
      simple_inner_gap_sum_->WithLabels(id).Set(m.exact().running().simple().inner_gap_sum());
      simple_outer_gap_sum_->WithLabels(id).Set(m.exact().running().simple().outer_gap_sum());
    }
    return;
  }
  lambda_->WithLabels(id).Set(r.lambda());
  inner_iterations_->WithLabels(id).Set(r.z_iterations() + r.y_iterations());
  if (m.has_exact()) {
    const v1::ExactMetrics& e = m.exact();
    blreg_->WithLabels(id).Set(e.running().blreg());
    regret_term_->WithLabels(id).Set(e.regret_term());
    hypergradient_error_->WithLabels(id).Set(e.hypergradient_error());
    variation_->WithLabels(id).Set(e.running().variation_sum());
    drift_->WithLabels(id).Set(e.running().drift_sum());
    value_->WithLabels(id).Set(e.value());
  }
}

void ServiceMetrics::OnSessionDeleted(const std::string& id) {
  sessions_->WithLabels({}).Add(-1);
  std::lock_guard<std::mutex> lock(series_mu_);
  live_.erase(id);
  for (metrics::GaugeFamily* g :
       {t_, blreg_, regret_term_, hypergradient_error_, variation_, drift_, lambda_,
        inner_iterations_, value_, upper_loss_, simple_inner_gap_, simple_outer_gap_,
        simple_fw_gap_, simple_inner_gap_sum_, simple_outer_gap_sum_, simple_objective_,
        simple_inner_objective_}) {
    g->Remove({id});
  }
}

}  // namespace f2obo::server
