// The service's Prometheus series: server-wide request, error, latency,
// session and ingest figures, and per-session series: those every problem
// class shares (step index t, prequential loss, the decision's named
// hyperparameters) here, each class's own
// (bilevel: BLReg, regret term, hypergradient error, V_T / H_2,T estimates,
// lambda, inner iterations, F_t(x_t); simple bilevel: its gaps; multi-task:
// regret and grad F over the tasks seen) in its presentation
// (server/presentation/).  Per-session series carry a session_id label that
// can be switched off for servers with very many sessions; the server-wide
// series remain.  The coverage of the exact metrics (steps evaluated and
// skipped, the sampling probability) is every class's; each class's
// presentation adds the estimate of its regret sum with its standard error.
//
// Thread-safety: thread-safe (the registry's series are atomic).
#ifndef F2OBO_SERVER_SERVICE_METRICS_H_
#define F2OBO_SERVER_SERVICE_METRICS_H_

#include <grpcpp/support/status.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/metrics/registry.h"
#include "server/presentation/class_presentation.h"
#include "server/service.h"

namespace f2obo::server {

class ServiceMetrics final : public ServiceObserver {
 public:
  ServiceMetrics(metrics::Registry* registry, bool per_session_labels);

  void OnRpc(const char* method, grpc::StatusCode code, double seconds) override;
  void OnSessionCreated(const std::string& id) override;
  void OnSessionDeleted(const std::string& id) override;
  void OnGroupMemberStep(grpc::StatusCode code) override;
  void OnRollback(const std::string& id, int64_t to_t) override;
  void OnFork(const std::string& new_id) override;
  void OnInFlight(int delta) override;
  // A request that could not be decoded (f2obo/v1/decode_traits.h).
  void OnUndecodableRequest();
  // From the metrics pipeline's workers.
  void OnStepMetrics(const v1::StepMetrics& m);

 private:
  const bool per_session_;
  // Per-session series are updated and removed under this lock, and only
  // for live sessions: a late message of a deleted session must neither
  // touch a removed series nor bring it back.
  absl::Mutex series_mu_;
  absl::flat_hash_set<std::string> live_ ABSL_GUARDED_BY(series_mu_);
  // A live session's series, looked up by name at its first step and kept
  // (each step updated them through a lookup by label strings: a third of
  // the metrics worker's time on tiny steps).  Valid until
  // OnSessionDeleted removes them, under series_mu_ like every use.
  struct SessionSeries {
    metrics::Gauge* t = nullptr;
    metrics::Gauge* upper_loss = nullptr;
    metrics::Gauge* exact_evaluated = nullptr;  // these three: at their first use
    metrics::Gauge* exact_skipped_steps = nullptr;
    metrics::Gauge* exact_probability = nullptr;
    // Its f2obo_session_hyperparameter series, by name, as of its last step.
    std::vector<std::pair<std::string, metrics::Gauge*>> hyperparameters;
  };
  absl::flat_hash_map<std::string, SessionSeries> series_ ABSL_GUARDED_BY(series_mu_);
  // Each RPC label's request counter and latency histogram, looked up by
  // label strings at its first call and kept (never removed): OnRpc is on
  // every step's path, where the lookup by a vector of label strings cost
  // about a microsecond a message.
  struct RpcSeries {
    metrics::Counter* requests = nullptr;
    metrics::Histogram* latency = nullptr;
  };
  absl::Mutex rpc_mu_;
  absl::flat_hash_map<std::string, RpcSeries> rpc_series_ ABSL_GUARDED_BY(rpc_mu_);
  RpcSeries RpcSeriesOf(const char* method);
  // The unlabelled series every step updates (never removed).
  metrics::Gauge* in_flight_now_;
  metrics::Counter* steps_total_;
  metrics::Counter* rows_total_;
  metrics::Histogram* round_seconds_;
  metrics::CounterFamily* requests_;
  metrics::CounterFamily* errors_;
  metrics::HistogramFamily* latency_;
  metrics::GaugeFamily* in_flight_;
  metrics::HistogramFamily* round_latency_;
  metrics::GaugeFamily* sessions_;
  metrics::CounterFamily* steps_;
  metrics::CounterFamily* rows_;
  metrics::CounterFamily* cap_hits_;
  metrics::CounterFamily* exact_skipped_;
  metrics::CounterFamily* exact_unconverged_;
  metrics::CounterFamily* group_member_steps_;
  metrics::CounterFamily* undecodable_;
  metrics::CounterFamily* rollbacks_;
  metrics::CounterFamily* forks_;
  // Per session (label session_id): every class's, then each class's own
  // (in presentation::Presentations() order).
  metrics::GaugeFamily* t_;
  metrics::GaugeFamily* upper_loss_;
  // Coverage of the exact metrics: due steps with and
  // without them, and the probability the last due step was sampled with.
  metrics::GaugeFamily* exact_evaluated_;
  metrics::GaugeFamily* exact_skipped_steps_;
  metrics::GaugeFamily* exact_probability_;
  metrics::GaugeFamily* hyperparameter_;
  std::vector<
      std::pair<const presentation::ClassPresentation*, std::unique_ptr<presentation::ClassSeries>>>
      classes_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SERVICE_METRICS_H_
