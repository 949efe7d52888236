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
#include "server/store_metrics.h"

namespace f2obo::server {

// The server's configuration: one member per flag of server_flags.def,
// with its name and default (main() fills them from the flags), plus the
// session limits.
struct ServerOptions {
#define F2OBO_SERVER_FLAG(type, name, def, rule, help) type name = def;
#define F2OBO_LIMIT_FLAG(type, name, def, rule, help)
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG
  // The flags F2OBO_LIMIT_FLAG declares, and the memory limits main()
  // derives from --max_y_dim and --max_total_state_bytes.
  Limits limits;
};

// Each flag's value against its rule (server_flags.def); INVALID_ARGUMENT
// "--<flag>: <rule>" for the first one refused.
absl::Status CheckServerFlags(const ServerOptions& options);

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
  std::unique_ptr<StoreMetrics> store_metrics_;
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
