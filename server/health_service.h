// The standard gRPC health service (grpc.health.v1.Health) on the sync API.
//
// Why not gRPC's own (grpc::EnableDefaultHealthCheckService): in gRPC
// 1.51 it is a callback service, and a server with any callback method gets
// gRPC's "callback alternative" completion queue, served by threads of its
// own ("nexting_thread", two on this machine) that poll the server's
// connections alongside the sync server's threads.  Every step message
// could then be read by one of them and handed to the stream's handler
// thread: an extra wake-up and context switch per message, which on a
// 2-core machine was most of a tiny step's cost beyond a raw gRPC echo
// (bench/RESULTS.md).  This one is a sync service like the rest.
//
// The overall status (service "") is the only one known: SERVING from the
// start, NOT_SERVING from Shutdown() on.  As gRPC's: Check of another
// service name is NOT_FOUND; Watch sends the status at once and then each
// change (SERVICE_UNKNOWN for another name), until the client cancels or
// the server shuts down.  No token is needed (the f2obo service's auth
// does not apply; probes carry none).
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_HEALTH_SERVICE_H_
#define F2OBO_SERVER_HEALTH_SERVICE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace f2obo::server {

class HealthService final : public grpc::health::v1::Health::Service {
 public:
  using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;

  grpc::Status Check(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::health::v1::HealthCheckResponse* out) override;
  grpc::Status Watch(grpc::ServerContext* ctx, const grpc::health::v1::HealthCheckRequest* req,
                     grpc::ServerWriter<grpc::health::v1::HealthCheckResponse>* writer) override;

  // NOT_SERVING from now on; every Watch sends it and ends.
  void Shutdown();

 private:
  absl::Mutex mu_;
  Status status_ ABSL_GUARDED_BY(mu_) = grpc::health::v1::HealthCheckResponse::SERVING;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar cv_;  // status_ or shut_down_ changed
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_HEALTH_SERVICE_H_
