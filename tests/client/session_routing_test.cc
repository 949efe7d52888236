// The client's x-f2obo-session metadata (client/session_routing.h), as
// received by a gRPC server on loopback that records it: the header a front
// proxy (deploy/k8s/envoy) hashes on to pin a session to one replica.
#include "client/session_routing.h"

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "client/client.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace f2obo::client {
namespace {

// Records, per method, the x-f2obo-session value of the last call
// ("<none>" when absent) and answers OK with empty replies.
class RecordingService : public v1::F2obo::Service {
 public:
  std::string Last(const std::string& method) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = seen_.find(method);
    return it == seen_.end() ? "<not called>" : it->second;
  }

  grpc::Status CreateSession(grpc::ServerContext* ctx, const v1::CreateSessionRequest*,
                             v1::SessionInfo*) override {
    return Record("CreateSession", ctx);
  }
  grpc::Status GetSession(grpc::ServerContext* ctx, const v1::GetSessionRequest*,
                          v1::SessionInfo*) override {
    return Record("GetSession", ctx);
  }
  grpc::Status ListSessions(grpc::ServerContext* ctx, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse*) override {
    return Record("ListSessions", ctx);
  }
  grpc::Status DeleteSession(grpc::ServerContext* ctx, const v1::DeleteSessionRequest*,
                             v1::DeleteSessionResponse*) override {
    return Record("DeleteSession", ctx);
  }
  grpc::Status GetDecision(grpc::ServerContext* ctx, const v1::GetDecisionRequest*,
                           v1::Decision*) override {
    return Record("GetDecision", ctx);
  }
  grpc::Status Step(grpc::ServerContext* ctx, const v1::StepRequest* req,
                    v1::StepReply* out) override {
    out->set_t(req->t());
    return Record("Step", ctx);
  }
  grpc::Status Steps(grpc::ServerContext* ctx,
                     grpc::ServerReaderWriter<v1::StepReply, v1::StepRequest>* rw) override {
    v1::StepRequest req;
    while (rw->Read(&req)) {
      v1::StepReply reply;
      reply.set_t(req.t());
      rw->Write(reply);
    }
    return Record("Steps", ctx);
  }
  grpc::Status OracleSteps(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<v1::OracleServerMessage, v1::OracleClientMessage>* rw) override {
    v1::OracleClientMessage in;
    while (rw->Read(&in)) {
      v1::OracleServerMessage out;
      out.mutable_done()->set_t(in.open().t());
      rw->Write(out);
    }
    return Record("OracleSteps", ctx);
  }
  grpc::Status WatchMetrics(grpc::ServerContext* ctx, const v1::WatchMetricsRequest*,
                            grpc::ServerWriter<v1::StepMetrics>*) override {
    return Record("WatchMetrics", ctx);
  }
  grpc::Status ImportSession(grpc::ServerContext* ctx, const v1::ImportSessionRequest*,
                             v1::SessionInfo*) override {
    return Record("ImportSession", ctx);
  }
  grpc::Status GetGroup(grpc::ServerContext* ctx, const v1::GetGroupRequest*,
                        v1::GroupInfo*) override {
    return Record("GetGroup", ctx);
  }
  grpc::Status CheckpointSession(grpc::ServerContext* ctx, const v1::CheckpointSessionRequest*,
                                 v1::SessionInfo*) override {
    return Record("CheckpointSession", ctx);
  }
  grpc::Status RollbackSession(grpc::ServerContext* ctx, const v1::RollbackSessionRequest*,
                               v1::SessionInfo*) override {
    return Record("RollbackSession", ctx);
  }
  grpc::Status ForkSession(grpc::ServerContext* ctx, const v1::ForkSessionRequest*,
                           v1::SessionInfo*) override {
    return Record("ForkSession", ctx);
  }

 private:
  grpc::Status Record(const std::string& method, grpc::ServerContext* ctx) {
    const auto& md = ctx->client_metadata();
    const auto range = md.equal_range(kSessionHeader);
    std::string value = "<none>";
    int count = 0;
    for (auto it = range.first; it != range.second; ++it, ++count) {
      value = std::string(it->second.data(), it->second.size());
    }
    if (count > 1) value = "<repeated>";
    std::lock_guard<std::mutex> lock(mu_);
    seen_[method] = value;
    return grpc::Status::OK;
  }

  std::mutex mu_;
  std::map<std::string, std::string> seen_;
};

class SessionRoutingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  ClientOptions Options() const {
    ClientOptions o;
    o.target = "127.0.0.1:" + std::to_string(port_);
    o.rpc_timeout_seconds = 10;
    o.max_attempts = 1;
    return o;
  }

  RecordingService service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

TEST(SessionRoutingKeyTest, IsTheIdUpToTheFirstDot) {
  EXPECT_EQ(SessionRoutingKey("hpo"), "hpo");
  EXPECT_EQ(SessionRoutingKey("grp.af2obo"), "grp");  // a group member routes with its group
  EXPECT_EQ(SessionRoutingKey("a.b.c"), "a");
  EXPECT_EQ(SessionRoutingKey(""), "");
}

TEST_F(SessionRoutingTest, UnaryCallsCarryTheSessionKey) {
  Client c(Options());
  ASSERT_TRUE(c.GetSession("s1").ok());
  EXPECT_EQ(service_.Last("GetSession"), "s1");
  ASSERT_TRUE(c.GetDecision("grp.f2obo").ok());
  EXPECT_EQ(service_.Last("GetDecision"), "grp");
  ASSERT_TRUE(c.DeleteSession("s2").ok());
  EXPECT_EQ(service_.Last("DeleteSession"), "s2");
  v1::StepRequest step;
  step.set_session_id("s3");
  step.set_t(1);
  ASSERT_TRUE(c.Step(step).ok());
  EXPECT_EQ(service_.Last("Step"), "s3");
  v1::CreateSessionRequest create;
  create.set_session_id("s4");
  ASSERT_TRUE(c.CreateSession(create).ok());
  EXPECT_EQ(service_.Last("CreateSession"), "s4");
}

// A fork is made where its source lives: it routes by the source's key.
TEST_F(SessionRoutingTest, CheckpointRollbackAndForkCarryTheSourceSessionKey) {
  Client c(Options());
  ASSERT_TRUE(c.CheckpointSession("champ").ok());
  EXPECT_EQ(service_.Last("CheckpointSession"), "champ");
  ASSERT_TRUE(c.RollbackSession("grp.m", 3).ok());
  EXPECT_EQ(service_.Last("RollbackSession"), "grp");
  v1::ForkSessionRequest fork;
  fork.set_session_id("champ");
  fork.set_new_session_id("other");
  ASSERT_TRUE(c.ForkSession(fork).ok());
  EXPECT_EQ(service_.Last("ForkSession"), "champ");
}

TEST_F(SessionRoutingTest, CallsWithoutASessionCarryNone) {
  Client c(Options());
  ASSERT_TRUE(c.ListSessions().ok());
  EXPECT_EQ(service_.Last("ListSessions"), "<none>");
  ASSERT_TRUE(c.CreateSession(v1::CreateSessionRequest()).ok());  // server picks the id
  EXPECT_EQ(service_.Last("CreateSession"), "<none>");
}

TEST_F(SessionRoutingTest, StubCallsAreCoveredToo) {
  Client c(Options());
  // Import without a new id keeps (and routes by) the exported id.
  v1::ImportSessionRequest import;
  import.mutable_session()->set_session_id("moved");
  v1::SessionInfo info;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(c.stub().ImportSession(&ctx, import, &info).ok());
  }
  EXPECT_EQ(service_.Last("ImportSession"), "moved");
  import.set_session_id("renamed");
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(c.stub().ImportSession(&ctx, import, &info).ok());
  }
  EXPECT_EQ(service_.Last("ImportSession"), "renamed");
  // Server streaming: metadata and the request travel together.
  {
    grpc::ClientContext ctx;
    v1::WatchMetricsRequest watch;
    watch.set_session_id("w");
    auto reader = c.stub().WatchMetrics(&ctx, watch);
    v1::StepMetrics m;
    while (reader->Read(&m)) {
    }
    ASSERT_TRUE(reader->Finish().ok());
  }
  EXPECT_EQ(service_.Last("WatchMetrics"), "w");
  {
    grpc::ClientContext ctx;
    v1::GetGroupRequest get;
    get.set_group_id("grp");
    v1::GroupInfo group;
    ASSERT_TRUE(c.stub().GetGroup(&ctx, get, &group).ok());
  }
  EXPECT_EQ(service_.Last("GetGroup"), "grp");
}

// Runs a Steps stream of two requests for `id`; true if both replies came.
bool RunSteps(Client& c, const std::string& id, bool corked) {
  grpc::ClientContext ctx;
  if (corked) PrepareStreamContext(&ctx);
  auto rpc = c.stub().Steps(&ctx);
  for (int t = 1; t <= 2; ++t) {
    v1::StepRequest req;
    req.set_session_id(id);
    req.set_t(t);
    v1::StepReply reply;
    if (!rpc->Write(req) || !rpc->Read(&reply) || reply.t() != t) return false;
  }
  rpc->WritesDone();
  return rpc->Finish().ok();
}

TEST_F(SessionRoutingTest, CorkedStepsStreamCarriesTheKeyOnce) {
  Client c(Options());
  ASSERT_TRUE(RunSteps(c, "stream.a", /*corked=*/true));
  EXPECT_EQ(service_.Last("Steps"), "stream");
  // The documented caveat: an uncorked bidi stream opens before its first
  // message, so it cannot carry the key.
  ASSERT_TRUE(RunSteps(c, "stream.a", /*corked=*/false));
  EXPECT_EQ(service_.Last("Steps"), "<none>");
}

// An oracle stream names its session in the first message's `open`.
TEST_F(SessionRoutingTest, CorkedOracleStepsStreamCarriesTheKeyOfTheSessionItOpens) {
  Client c(Options());
  grpc::ClientContext ctx;
  PrepareStreamContext(&ctx);
  auto rpc = c.stub().OracleSteps(&ctx);
  v1::OracleClientMessage open;
  open.mutable_open()->set_session_id("orc.m");
  open.mutable_open()->set_t(1);
  v1::OracleServerMessage reply;
  ASSERT_TRUE(rpc->Write(open));
  ASSERT_TRUE(rpc->Read(&reply));
  EXPECT_EQ(reply.done().t(), 1);
  rpc->WritesDone();
  ASSERT_TRUE(rpc->Finish().ok());
  EXPECT_EQ(service_.Last("OracleSteps"), "orc");
}

TEST_F(SessionRoutingTest, OptionOffSendsNothing) {
  ClientOptions o = Options();
  o.session_header = false;
  Client c(o);
  ASSERT_TRUE(c.GetSession("s1").ok());
  EXPECT_EQ(service_.Last("GetSession"), "<none>");
  ASSERT_TRUE(RunSteps(c, "s1", /*corked=*/true));
  EXPECT_EQ(service_.Last("Steps"), "<none>");
}

}  // namespace
}  // namespace f2obo::client
