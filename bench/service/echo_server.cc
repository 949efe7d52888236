// f2obo-echo-server: the f2obo.v1.F2obo API with nothing behind it, the
// floor of the service path for bench/service/echo_bench.sh.
//
// CreateSession builds the session only to answer with the real SessionInfo
// (so `f2obo-cli bench` sees the same shapes); each Steps request is parsed
// by gRPC as usual and answered at once with a StepReply of the real one's
// shape (session id, t, x of x_dim entries, a filled RoundReport) -- no
// decoding into Eigen, no round, no store, no reply cache, no metrics.
// DeleteSession answers OK.  Everything else is UNIMPLEMENTED.
//
// Flags as the server's, so lib.sh's run_loadgen can start either:
// --listen (port 0 picks one) and the banner line "listening on H:P, ...";
// other flags are accepted and ignored.
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/f2obo.grpc.pb.h"

namespace f2obo {
namespace {

class EchoService final : public v1::F2obo::Service {
 public:
  grpc::Status CreateSession(grpc::ServerContext*, const v1::CreateSessionRequest* req,
                             v1::SessionInfo* out) override {
    absl::StatusOr<SessionConfig> config = ToSessionConfig(req->spec());
    if (!config.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(config.status().message()));
    }
    absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(*config);
    if (!session.ok()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(session.status().message()));
    }
    std::string id = req->session_id();
    std::lock_guard<std::mutex> lock(mu_);
    if (id.empty()) id = "echo-" + std::to_string(++created_);
    *out = SessionInfoOf(id, **session, (*session)->state(), (*session)->metrics(), 0);
    v1::StepReply& reply = replies_[id];
    reply.set_session_id(id);
    ToRepeated((*session)->state().x, reply.mutable_x());
    v1::BilevelRoundReport* r = reply.mutable_report()->mutable_bilevel();
    r->set_lambda(5.0);
    r->set_alpha(0.1);
    r->set_beta(0.1);
    r->set_gamma(0.001);
    r->set_z_iterations(5);
    r->set_y_iterations(5);
    r->set_residual_z(0.5);
    r->set_residual_y(0.5);
    r->set_hypergradient_norm(0.5);
    reply.mutable_report()->set_rows_processed(1);
    reply.mutable_report()->set_upper_loss_before(1.0);
    reply.mutable_report()->set_round_seconds(1e-4);
    return grpc::Status::OK;
  }

  grpc::Status DeleteSession(grpc::ServerContext*, const v1::DeleteSessionRequest* req,
                             v1::DeleteSessionResponse*) override {
    std::lock_guard<std::mutex> lock(mu_);
    replies_.erase(req->session_id());
    return grpc::Status::OK;
  }

  grpc::Status Steps(grpc::ServerContext*,
                     grpc::ServerReaderWriter<v1::StepReply, v1::StepRequest>* stream) override {
    v1::StepRequest req;
    v1::StepReply reply;
    while (stream->Read(&req)) {
      if (reply.session_id() != req.session_id()) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = replies_.find(req.session_id());
        if (it == replies_.end()) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown session");
        }
        reply = it->second;
      }
      reply.set_t(req.t());
      if (!stream->Write(reply)) break;
    }
    return grpc::Status::OK;
  }

 private:
  std::mutex mu_;
  int64_t created_ = 0;
  std::unordered_map<std::string, v1::StepReply> replies_;
};

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:0";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--listen=", 9) == 0) listen = argv[i] + 9;
  }
  f2obo::EchoService service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC,
                              100);  // as the server
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "f2obo-echo-server: cannot listen on %s\n", listen.c_str());
    return 1;
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("f2obo-echo-server listening on %s:%d, metrics on (disabled)\n", host.c_str(), port);
  std::fflush(stdout);
  server->Wait();  // until SIGTERM ends the process
  return 0;
}
