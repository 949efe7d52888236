// Oracle families over real gRPC: a session of family "oracle"
// whose client answers with logistic_hpo's own math follows the built-in
// logistic_hpo session, and bad clients change nothing.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "tests/server/e2e_support.h"
#include "tests/server/oracle_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::FamilyAnswerer;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::OracleClient;
using testing::OracleOutcome;
using testing::ServerProcess;

FamilyCase Logistic() { return testing::AllFamilyCases()[2]; }  // dense logistic_hpo

std::unique_ptr<v1::F2obo::Stub> Stub(const ServerProcess& server) {
  return v1::F2obo::NewStub(
      grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
}

// The built-in session's spec and the oracle session's: the same, but the
// family is "oracle" with the built-in's dimensions and no exact metrics.
v1::SessionSpec BuiltIn(const std::string& algorithm) {
  v1::SessionSpec spec = testing::SpecFor(Logistic(), algorithm, 7);
  spec.mutable_metrics()->set_exact_every(0);
  // Given: the default (automatic) step sizes need HVPs.
  spec.mutable_options()->set_alpha(0.1);
  spec.mutable_options()->set_beta(0.5);
  testing::KeepReadOptions(&spec);  // beta: the F2OBO family's
  return spec;
}

v1::SessionSpec OracleSpec(const std::string& algorithm, const v1::SessionInfo& built_in) {
  v1::SessionSpec spec = BuiltIn(algorithm);
  spec.mutable_family()->Clear();
  spec.mutable_family()->set_name("oracle");
  spec.mutable_family()->set_x_dim(built_in.x_dim());
  spec.mutable_family()->set_y_dim(built_in.bilevel().y_dim());
  spec.mutable_metrics()->clear_exact_every();
  return spec;
}

v1::SessionInfo Create(v1::F2obo::Stub* stub, const std::string& id, const v1::SessionSpec& spec) {
  grpc::ClientContext ctx;
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  *req.mutable_spec() = spec;
  v1::SessionInfo info;
  const grpc::Status s = stub->CreateSession(&ctx, req, &info);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return info;
}

v1::Decision Decision(v1::F2obo::Stub* stub, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetDecisionRequest req;
  req.set_session_id(id);
  v1::Decision d;
  EXPECT_TRUE(stub->GetDecision(&ctx, req, &d).ok());
  return d;
}

double MaxDiff(const google::protobuf::RepeatedField<double>& a,
               const google::protobuf::RepeatedField<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (int i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// A pair of sessions: the built-in "ref-<a>" and the oracle "orc-<a>".
struct Pair {
  v1::SessionInfo built_in;
  std::string oracle_id;
};

Pair CreatePair(v1::F2obo::Stub* stub, const std::string& algorithm) {
  Pair p;
  p.built_in = Create(stub, "ref-" + algorithm, BuiltIn(algorithm));
  p.oracle_id = "orc-" + algorithm;
  Create(stub, p.oracle_id, OracleSpec(algorithm, p.built_in));
  return p;
}

v1::StepReply BuiltInStep(v1::F2obo::Stub* stub, const std::string& algorithm, int64_t t) {
  grpc::ClientContext ctx;
  v1::StepReply reply;
  const grpc::Status s =
      stub->Step(&ctx, testing::RequestFor(Logistic(), "ref-" + algorithm, t), &reply);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return reply;
}

// The oracle session's trajectory equals the built-in one's to 1e-12, for
// every algorithm an oracle family serves.
TEST(OracleE2E, EveryFirstOrderAlgorithmFollowsTheBuiltInFamily) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto stub = Stub(server);
  for (const std::string algorithm : {"f2obo", "f2obo_sl", "af2obo", "sf2obo"}) {
    SCOPED_TRACE(algorithm);
    const Pair p = CreatePair(stub.get(), algorithm);
    FamilyAnswerer answerer(Logistic());
    OracleClient client(stub.get());
    for (int64_t t = 1; t <= 12; ++t) {
      const v1::StepReply ref = BuiltInStep(stub.get(), algorithm, t);
      const OracleOutcome out = client.Step(p.oracle_id, t, &answerer);
      ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
      EXPECT_GE(out.requests, 2);
      EXPECT_LE(MaxDiff(out.reply->x(), ref.x()), 1e-12) << "t = " << t;
      EXPECT_NEAR(out.reply->report().upper_loss_before(), ref.report().upper_loss_before(), 1e-12);
      EXPECT_EQ(out.reply->report().rows_processed(), ref.report().rows_processed());
      // y_{t+1} comes with `done`, as a point the client holds (the
      // hypergradient's y): no GetDecision needed.
      ASSERT_EQ(out.done->y_size(), 1);
      ASSERT_NE(out.done->y(0).id(), 0u);
      EXPECT_TRUE(out.done->y(0).values().empty());
      const Vector& y = client.points().at(out.done->y(0).id());
      const v1::Decision d = Decision(stub.get(), p.oracle_id);
      ASSERT_EQ(y.size(), d.y_size());
      for (int i = 0; i < d.y_size(); ++i) EXPECT_EQ(y[i], d.y(i));
    }
    EXPECT_TRUE(client.Close().ok());
    const v1::Decision a = Decision(stub.get(), p.oracle_id);
    const v1::Decision b = Decision(stub.get(), "ref-" + algorithm);
    EXPECT_EQ(a.t(), 13);
    EXPECT_LE(MaxDiff(a.y(), b.y()), 1e-12);
    EXPECT_NEAR(a.lambda(), b.lambda(), 1e-12);
  }
}

// The server's iterates are durable as any session's: kill -9 after three
// acknowledged steps, a restart on the same data directory, and a new
// client continues at t = 4 on the built-in session's trajectory.
TEST(OracleE2E, KillNineLosesNoAcknowledgedStepAndANewClientResumes) {
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started()) << server->banner();
  auto stub = Stub(*server);
  const Pair p = CreatePair(stub.get(), "sf2obo");  // its RNG is state too
  std::vector<v1::StepReply> ref;
  for (int64_t t = 1; t <= 6; ++t) ref.push_back(BuiltInStep(stub.get(), "sf2obo", t));
  {
    FamilyAnswerer answerer(Logistic());
    OracleClient client(stub.get());
    for (int64_t t = 1; t <= 3; ++t) ASSERT_TRUE(client.Step(p.oracle_id, t, &answerer).reply);
    server->Stop(SIGKILL);
  }
  server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started()) << server->banner();
  stub = Stub(*server);
  EXPECT_EQ(Decision(stub.get(), p.oracle_id).t(), 4);
  FamilyAnswerer answerer(Logistic());
  OracleClient client(stub.get());
  for (int64_t t = 4; t <= 6; ++t) {
    const OracleOutcome out = client.Step(p.oracle_id, t, &answerer);
    ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
    EXPECT_LE(MaxDiff(out.reply->x(), ref[t - 1].x()), 1e-12) << "t = " << t;
  }
  // A replayed step asks nothing and answers from the reply cache.
  const OracleOutcome replay = client.Step(p.oracle_id, 6, &answerer);
  ASSERT_TRUE(replay.reply.has_value());
  EXPECT_TRUE(replay.reply->replayed());
  EXPECT_EQ(replay.requests, 0);
}

TEST(OracleE2E, SecondOrderAlgorithmsAutoStepsAndExactMetricsAreRefusedAtCreate) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto stub = Stub(server);
  const v1::SessionInfo ref = Create(stub.get(), "ref", BuiltIn("f2obo"));
  const auto refuse = [&](v1::SessionSpec spec, const std::string& why) {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    *req.mutable_spec() = spec;
    v1::SessionInfo info;
    const grpc::Status s = stub->CreateSession(&ctx, req, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr(why));
  };
  refuse(OracleSpec("aobo", ref), "needs Hessian-vector products");
  v1::SessionSpec auto_steps = OracleSpec("af2obo", ref);
  auto_steps.mutable_options()->set_alpha_auto(true);
  auto_steps.mutable_options()->set_beta_auto(true);
  refuse(auto_steps, "options.alpha_auto");
  v1::SessionSpec exact = OracleSpec("f2obo", ref);
  exact.mutable_metrics()->set_exact_every(1);
  refuse(exact, "metrics.exact_every");
}

TEST(OracleE2E, UnaryStepOfAnOracleSessionAndOracleStepOfABuiltInOneAreRefused) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto stub = Stub(server);
  const Pair p = CreatePair(stub.get(), "f2obo");
  {
    grpc::ClientContext ctx;
    v1::StepReply reply;
    const grpc::Status s =
        stub->Step(&ctx, testing::RequestFor(Logistic(), p.oracle_id, 1), &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(s.error_message(), HasSubstr("OracleSteps"));
  }
  FamilyAnswerer answerer(Logistic());
  OracleClient client(stub.get());
  const OracleOutcome out = client.Step("ref-f2obo", 1, &answerer);
  EXPECT_FALSE(out.reply.has_value());
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(out.status.error_message(), HasSubstr("Step or Steps"));
}

}  // namespace
}  // namespace f2obo
