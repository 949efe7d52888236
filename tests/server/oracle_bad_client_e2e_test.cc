// Bad oracle clients, over real gRPC: each gets a precise
// error, its round is discarded, the session is unchanged, and a new
// stream (as a new client process would open) resumes from the server's
// iterates to the same trajectory as a client that never failed.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

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
using testing::Tamper;

FamilyCase Logistic() { return testing::AllFamilyCases()[2]; }

class OracleBadClient : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> flags = {}) {
    server_ = std::make_unique<ServerProcess>(std::move(flags));
    ASSERT_TRUE(server_->started()) << server_->banner();
    stub_ = v1::F2obo::NewStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
    v1::SessionSpec spec = testing::SpecFor(Logistic(), "f2obo", 7);
    spec.mutable_family()->Clear();
    spec.mutable_family()->set_name("oracle");
    spec.mutable_family()->set_x_dim(6);      // one L2 coefficient per feature
    spec.mutable_family()->set_y_dim(7 * 3);  // (W, b): (6 + 1) x 3 classes
    spec.mutable_options()->set_alpha(0.1);
    spec.mutable_options()->set_beta(0.5);
    for (const char* id : {"bad", "good"}) {
      grpc::ClientContext ctx;
      v1::CreateSessionRequest req;
      req.set_session_id(id);
      *req.mutable_spec() = spec;
      v1::SessionInfo info;
      const grpc::Status s = stub_->CreateSession(&ctx, req, &info);
      ASSERT_TRUE(s.ok()) << s.error_message();
    }
    // Two good steps on both, so that "unchanged" is not just the start.
    for (const char* id : {"bad", "good"}) Steps(id, 1, 2);
  }

  void Steps(const std::string& id, int64_t from, int64_t to) {
    FamilyAnswerer answerer(Logistic());
    OracleClient client(stub_.get());
    for (int64_t t = from; t <= to; ++t) {
      const OracleOutcome out = client.Step(id, t, &answerer);
      ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
    }
    EXPECT_TRUE(client.Close().ok());
  }

  v1::Decision Decision(const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetDecisionRequest req;
    req.set_session_id(id);
    v1::Decision d;
    EXPECT_TRUE(stub_->GetDecision(&ctx, req, &d).ok());
    return d;
  }

  // Step 3 of "bad" with `tamper`; the outcome, after which "bad" must be
  // exactly "good" (at t = 3), and, once both took steps 3 and 4, still.
  OracleOutcome BadStep(const Tamper& tamper, double timeout = 60.0) {
    FamilyAnswerer answerer(Logistic());
    OracleOutcome out;
    {
      OracleClient client(stub_.get(), timeout);
      out = client.Step("bad", 3, &answerer, tamper);
    }
    EXPECT_FALSE(out.reply.has_value());
    ExpectSame();
    EXPECT_EQ(Decision("bad").t(), 3);
    Steps("bad", 3, 4);  // a new stream resumes from the server's iterates
    Steps("good", 3, 4);
    ExpectSame();
    return out;
  }

  void ExpectSame() {
    const v1::Decision a = Decision("bad"), b = Decision("good");
    EXPECT_EQ(a.t(), b.t());
    ASSERT_EQ(a.x_size(), b.x_size());
    for (int i = 0; i < a.x_size(); ++i) EXPECT_EQ(a.x(i), b.x(i));
    ASSERT_EQ(a.y_size(), b.y_size());
    for (int i = 0; i < a.y_size(); ++i) EXPECT_EQ(a.y(i), b.y(i));
    EXPECT_EQ(a.lambda(), b.lambda());
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::F2obo::Stub> stub_;
};

TEST_F(OracleBadClient, WrongSizeIsRefusedNamingTheField) {
  Start();
  const OracleOutcome out = BadStep([](int index, v1::OracleAnswers* a) {
    if (index == 1) a->mutable_answers(2)->mutable_grad_y()->resize(8 * 20);
    return true;
  });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(out.status.error_message(),
              HasSubstr("answers[2].grad_y: 160 bytes, expected 21 float64"));
}

TEST_F(OracleBadClient, NonFiniteNumberIsRefusedNamingTheEntry) {
  Start();
  const OracleOutcome out = BadStep([](int index, v1::OracleAnswers* a) {
    if (index == 2) {
      const double nan = std::numeric_limits<double>::quiet_NaN();
      std::memcpy(a->mutable_answers(0)->mutable_grad_y()->data() + 8 * 5, &nan, 8);
    }
    return true;
  });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(out.status.error_message(), HasSubstr("answers[0].grad_y[5]: nan is not finite"));
}

TEST_F(OracleBadClient, AnswerToAQuestionNotAskedIsRefused) {
  Start();
  const OracleOutcome out = BadStep([](int index, v1::OracleAnswers* a) {
    if (index == 1) a->mutable_answers(1)->set_query(a->answers(1).query() + 1000);
    return true;
  });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(out.status.error_message(), HasSubstr("was not asked"));
}

TEST_F(OracleBadClient, GradientNotAskedForIsRefused) {
  Start();
  const OracleOutcome out = BadStep([](int index, v1::OracleAnswers* a) {
    if (index == 1) a->mutable_answers(0)->set_grad_x(std::string(8 * 6, '\0'));
    return true;
  });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(out.status.error_message(), HasSubstr("answers[0].grad_x: not asked"));
}

TEST_F(OracleBadClient, SilentClientIsStoppedByTheRoundBudget) {
  Start({"--round_budget_seconds=1"});
  const auto start = std::chrono::steady_clock::now();
  const OracleOutcome out = BadStep([](int index, v1::OracleAnswers*) { return index != 1; });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  ASSERT_TRUE(out.error.has_value());
  EXPECT_EQ(out.error->code(), static_cast<int>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  EXPECT_THAT(out.error->message(), HasSubstr("per-round budget"));
  EXPECT_THAT(out.error->message(), HasSubstr("session unchanged"));
}

TEST_F(OracleBadClient, SilentClientIsStoppedByItsDeadline) {
  Start();
  const OracleOutcome out =
      BadStep([](int index, v1::OracleAnswers*) { return index != 1; }, /*timeout=*/2.0);
  // The client's own timer says DEADLINE_EXCEEDED; when the server's timer
  // for the same deadline fires first, its cancellation of the stream
  // (HTTP/2 RST_STREAM with CANCEL) reaches the client as CANCELLED.
  // Either way the round ended and BadStep checked the session unchanged.
  EXPECT_THAT(out.status.error_code(),
              ::testing::AnyOf(grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::CANCELLED));
}

TEST_F(OracleBadClient, DisconnectMidRoundLosesOnlyThatRound) {
  Start();
  OracleClient* current = nullptr;
  FamilyAnswerer answerer(Logistic());
  {
    OracleClient client(stub_.get());
    current = &client;
    const OracleOutcome out = client.Step("bad", 3, &answerer, [&](int index, v1::OracleAnswers*) {
      if (index != 1) return true;
      current->context()->TryCancel();
      return false;
    });
    EXPECT_FALSE(out.reply.has_value());
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::CANCELLED);
  }
  // The server notices the cancellation and discards the round; the next
  // stream's step 3 waits for the session's lock, so no sleep is needed.
  Steps("bad", 3, 4);
  Steps("good", 3, 4);
  ExpectSame();
}

// A Delete of the session stops the wait at once (the budget is 30 s).
TEST_F(OracleBadClient, SilentClientDoesNotHoldADeleteOfItsSession) {
  Start();
  FamilyAnswerer answerer(Logistic());
  OracleClient client(stub_.get());
  std::thread deleter;
  grpc::Status deleted;
  const auto start = std::chrono::steady_clock::now();
  const OracleOutcome out = client.Step("bad", 3, &answerer, [&](int index, v1::OracleAnswers*) {
    if (index == 1) {
      deleter = std::thread([&] {
        grpc::ClientContext ctx;
        v1::DeleteSessionRequest req;
        req.set_session_id("bad");
        v1::DeleteSessionResponse resp;
        deleted = stub_->DeleteSession(&ctx, req, &resp);
      });
    }
    return index != 1;
  });
  deleter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(deleted.ok()) << deleted.error_message();
  ASSERT_TRUE(out.error.has_value());
  EXPECT_EQ(out.error->code(), static_cast<int>(grpc::StatusCode::ABORTED));
  EXPECT_THAT(out.error->message(), HasSubstr("the session is being deleted"));
}

TEST_F(OracleBadClient, SilentClientDoesNotHoldShutdownHostage) {
  Start({"--shutdown_grace_seconds=1"});
  FamilyAnswerer answerer(Logistic());
  OracleClient client(stub_.get());
  std::thread stop;
  int exit_code = -1;
  const OracleOutcome out = client.Step("bad", 3, &answerer, [&](int index, v1::OracleAnswers*) {
    if (index == 1) stop = std::thread([&] { exit_code = server_->Stop(SIGTERM); });
    return index != 1;
  });
  stop.join();
  EXPECT_FALSE(out.reply.has_value());
  EXPECT_EQ(exit_code, 0);  // a graceful exit, within the grace, not held by the client
}

}  // namespace
}  // namespace f2obo
