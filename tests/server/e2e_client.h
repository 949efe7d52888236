// The RPCs the C++ client library does not wrap, for end-to-end tests:
// moving a session out of and into a server.
#ifndef F2OBO_TESTS_SERVER_E2E_CLIENT_H_
#define F2OBO_TESTS_SERVER_E2E_CLIENT_H_

#include <grpcpp/support/status.h>

#include <string>

#include "client/client.h"

namespace f2obo::testing {

// The export of session `id`; `status` (may be null) gets the call's status.
v1::SessionExport ExportSession(client::Client& c, const std::string& id,
                                grpc::Status* status = nullptr);
// Imports `ex` as session `id`.
grpc::Status ImportSession(client::Client& c, const std::string& id, const v1::SessionExport& ex);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_E2E_CLIENT_H_
