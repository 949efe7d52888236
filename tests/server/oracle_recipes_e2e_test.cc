// The recipe protocol over real gRPC (docs/oracle-protocol.md): a client
// that opens its steps with `recipes` receives no y-sized point after the
// first step (each new y and z is named as base + coef * a gradient it
// kept), answers the y-update's two gradients as one, and its session
// still follows the built-in twin to 1e-12 for every algorithm an oracle
// family serves, as does an old client's beside it on the same server.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tests/server/e2e_support.h"
#include "tests/server/oracle_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::FamilyAnswerer;
using testing::FamilyCase;
using testing::OracleClient;
using testing::OracleOutcome;
using testing::ServerProcess;

FamilyCase Logistic() { return testing::AllFamilyCases()[2]; }  // dense logistic_hpo

v1::SessionSpec BuiltIn(const std::string& algorithm) {
  v1::SessionSpec spec = testing::SpecFor(Logistic(), algorithm, 7);
  spec.mutable_metrics()->set_exact_every(0);
  spec.mutable_options()->set_alpha(0.1);
  spec.mutable_options()->set_beta(0.5);
  testing::KeepReadOptions(&spec);
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

TEST(OracleRecipesE2E, EveryAlgorithmFollowsItsTwinWithoutSendingYAfterTheFirstStep) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto stub =
      v1::F2obo::NewStub(grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
  for (const std::string algorithm : {"f2obo", "f2obo_sl", "af2obo", "sf2obo"}) {
    SCOPED_TRACE(algorithm);
    const v1::SessionInfo twin = Create(stub.get(), "ref-" + algorithm, BuiltIn(algorithm));
    v1::SessionSpec spec = BuiltIn(algorithm);
    spec.mutable_family()->Clear();
    spec.mutable_family()->set_name("oracle");
    spec.mutable_family()->set_x_dim(twin.x_dim());
    spec.mutable_family()->set_y_dim(twin.bilevel().y_dim());
    spec.mutable_metrics()->clear_exact_every();
    Create(stub.get(), "new-" + algorithm, spec);
    Create(stub.get(), "old-" + algorithm, spec);
    FamilyAnswerer fresh(Logistic()), legacy(Logistic());
    OracleClient recipes(stub.get(), 60.0, "", /*recipes=*/true), values(stub.get());
    const int64_t y_bytes = 8 * twin.bilevel().y_dim();
    int64_t recipe_answer_bytes = 0, value_answer_bytes = 0;
    for (int64_t t = 1; t <= 12; ++t) {
      grpc::ClientContext ctx;
      v1::StepReply ref;
      ASSERT_TRUE(
          stub->Step(&ctx, testing::RequestFor(Logistic(), "ref-" + algorithm, t), &ref).ok());
      const OracleOutcome a = recipes.Step("new-" + algorithm, t, &fresh);
      const OracleOutcome b = values.Step("old-" + algorithm, t, &legacy);
      ASSERT_TRUE(a.reply.has_value()) << a.status.error_message();
      ASSERT_TRUE(b.reply.has_value()) << b.status.error_message();
      EXPECT_LE(MaxDiff(a.reply->x(), ref.x()), 1e-12) << "t = " << t;
      EXPECT_LE(MaxDiff(b.reply->x(), ref.x()), 1e-12) << "t = " << t;
      EXPECT_NEAR(a.reply->report().upper_loss_before(), ref.report().upper_loss_before(), 1e-12);
      if (t > 1) {
        // Down: no vector of y's size (this y is small; beyond
        // OraclePoints::kSmallPoint = 4096 entries z_t is sent once a step,
        // the server keeping no copy of the client's z between steps:
        // docs/oracle-protocol.md, "Memory"); the x of the step (sent once)
        // and O(1) bytes per recipe.  The old client gets y and z as
        // values.  (af2obo's y-loop reads f's and g's gradients apart, to
        // stop on their sum's norm: its y is sent, its z by recipe.)
        if (algorithm != "af2obo") {
          EXPECT_EQ(a.y_points_sent, 0) << "t = " << t;
        }
        EXPECT_GT(a.recipes, 0) << "t = " << t;
        EXPECT_GT(b.y_points_sent, 0) << "t = " << t;
        EXPECT_LT(a.request_bytes, b.request_bytes - y_bytes) << "t = " << t;
      }
      recipe_answer_bytes += a.answer_bytes;
      value_answer_bytes += b.answer_bytes;
      // y_{t+1} with `done`, as the session holds it (values kept under
      // an id when the client's own rounding left it a few ulps away).
      ASSERT_EQ(a.done->y_size(), 1);
      const Vector& y = recipes.points().at(a.done->y(0).id());
      const v1::Decision d = Decision(stub.get(), "new-" + algorithm);
      for (int i = 0; i < d.y_size(); ++i) ASSERT_EQ(y[i], d.y(i)) << "t = " << t;
    }
    // Up: the y-update's two gradients fused into one (F2OBO's three
    // gradients an inner iteration become two).
    if (algorithm == "f2obo" || algorithm == "sf2obo") {
      EXPECT_LT(recipe_answer_bytes, 0.8 * value_answer_bytes);
    }
    const v1::Decision a = Decision(stub.get(), "new-" + algorithm);
    const v1::Decision b = Decision(stub.get(), "ref-" + algorithm);
    EXPECT_EQ(a.t(), 13);
    EXPECT_LE(MaxDiff(a.y(), b.y()), 1e-12);
    EXPECT_TRUE(recipes.Close().ok());
    EXPECT_TRUE(values.Close().ok());
  }
}

}  // namespace
}  // namespace f2obo
