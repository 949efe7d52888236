#include "server/health_service.h"

#include <optional>

namespace f2obo::server {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

grpc::Status HealthService::Check(grpc::ServerContext*, const HealthCheckRequest* req,
                                  HealthCheckResponse* out) {
  if (!req->service().empty()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "service name unknown");
  }
  absl::MutexLock lock(&mu_);
  out->set_status(status_);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* ctx, const HealthCheckRequest* req,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  const bool known = req->service().empty();
  std::optional<Status> sent;
  for (;;) {
    Status now;
    bool shut_down;
    {
      absl::MutexLock lock(&mu_);
      const auto news = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return shut_down_ || !sent.has_value() || (known && status_ != *sent);
      };
      // Woken by a change; every 100 ms to notice a cancelled call.
      while (!news() && !ctx->IsCancelled()) cv_.WaitWithTimeout(&mu_, absl::Milliseconds(100));
      now = known ? status_ : HealthCheckResponse::SERVICE_UNKNOWN;
      shut_down = shut_down_;
    }
    if (ctx->IsCancelled()) return grpc::Status::OK;
    if (!sent.has_value() || now != *sent) {
      HealthCheckResponse out;
      out.set_status(now);
      if (!writer->Write(out)) return grpc::Status::OK;  // (no lock held here)
      sent = now;
    }
    if (shut_down) return grpc::Status::OK;
  }
}

void HealthService::Shutdown() {
  absl::MutexLock lock(&mu_);
  status_ = HealthCheckResponse::NOT_SERVING;
  shut_down_ = true;
  cv_.SignalAll();
}

}  // namespace f2obo::server
