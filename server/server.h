// f2obo-server assembled: gRPC service (+ health, reflection), session
// manager, metrics pipeline and the Prometheus HTTP endpoint.
#ifndef F2OBO_SERVER_SERVER_H_
#define F2OBO_SERVER_SERVER_H_

#include <grpcpp/server.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/auth.h"
#include "server/groups.h"
#include "server/health_service.h"
#include "server/metrics/http_exporter.h"
#include "server/metrics/registry.h"
#include "server/metrics_pipeline.h"
#include "server/process_memory.h"
#include "server/service.h"
#include "server/service_metrics.h"
#include "server/session_manager.h"
#include "server/store/session_store.h"

namespace f2obo::server {

// Filled from flags in main() only.
struct ServerOptions {
  std::string listen = "127.0.0.1:50051";
  // This replica's name, reported by GetServerInfo (scale-out); main()
  // defaults it to the host name.
  std::string replica_name;
  std::string metrics_listen = "127.0.0.1:9464";  // "" disables /metrics
  int metrics_threads = 1;                        // exact-metric workers
  int max_pending_metrics = 64;                   // per session, before exact metrics are skipped;
                                 // twice it: steps process the oldest jobs themselves
  // Under load, each due step's exact metrics are computed with a known
  // probability p_t in [min_exact_probability, exact_sample_probability]
  // (server/metrics_pipeline.h, core/metrics/sampling.h).
  double min_exact_probability = 0.05;
  double exact_sample_probability = 1.0;
  int http_threads = 2;
  bool dashboard = true;  // "/" and "/api/..." on the metrics port
  int max_message_bytes = 64 << 20;
  bool per_session_labels = true;  // session_id label on per-session series
  Limits limits;
  // Persistence: "" keeps sessions in memory only.
  std::string data_dir = "f2obo-data";
  Durability durability = Durability::kSync;
  int64_t max_store_bytes = 0;  // cap on the store's database file; 0 = none
  // Security.  Without a token file every caller may write (said loudly).
  std::string token_file;
  std::string tls_cert_file;  // PEM; with tls_key_file enables TLS
  std::string tls_key_file;
  std::string tls_client_ca_file;  // PEM; set = require and verify client certs
};

class Server {
 public:
  // Validates the options, binds both ports and starts serving.
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options);
  ~Server();

  int grpc_port() const { return grpc_port_; }
  // Sessions that could not be restored at start (one message each).
  const std::vector<std::string>& recovery_problems() const { return recovery_problems_; }
  size_t session_count() const { return sessions_->size(); }
  int metrics_port() const { return exporter_ ? exporter_->port() : 0; }

  // Graceful stop: health NOT_SERVING, end watch streams, stop accepting,
  // let in-flight rounds finish (up to `grace_seconds`), stop workers.
  void Shutdown(double grace_seconds = 10.0);

 private:
  Server() = default;

  ServerOptions options_;
  std::vector<std::string> recovery_problems_;
  std::unique_ptr<TokenAuthenticator> auth_;
  std::unique_ptr<SessionStore> store_;
  metrics::Registry registry_;
  std::unique_ptr<ServiceMetrics> service_metrics_;
  std::unique_ptr<ProcessMemoryGauges> process_memory_;
  std::unique_ptr<MetricsPipeline> pipeline_;
  std::unique_ptr<SessionManager> sessions_;
  std::unique_ptr<GroupManager> groups_;
  std::unique_ptr<F2oboService> service_;
  std::unique_ptr<HealthService> health_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<metrics::HttpExporter> exporter_;
  int grpc_port_ = 0;
  bool stopped_ = false;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SERVER_H_
