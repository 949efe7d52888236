// The one place where internal absl::Status becomes a gRPC status.
#ifndef F2OBO_SERVER_STATUS_H_
#define F2OBO_SERVER_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace f2obo::server {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STATUS_H_
