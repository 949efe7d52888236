#include "tests/server/e2e_client.h"

namespace f2obo::testing {

v1::SessionExport ExportSession(client::Client& c, const std::string& id, grpc::Status* status) {
  v1::ExportSessionRequest req;
  req.set_session_id(id);
  v1::SessionExport ex;
  auto ctx = c.NewContext();
  const grpc::Status s = c.stub().ExportSession(ctx.get(), req, &ex);
  if (status != nullptr) *status = s;
  return ex;
}

grpc::Status ImportSession(client::Client& c, const std::string& id, const v1::SessionExport& ex) {
  v1::ImportSessionRequest req;
  req.set_session_id(id);
  *req.mutable_session() = ex;
  v1::SessionInfo info;
  auto ctx = c.NewContext();
  return c.stub().ImportSession(ctx.get(), req, &info);
}

}  // namespace f2obo::testing
