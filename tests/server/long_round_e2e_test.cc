// A round that would run for minutes, against the real
// server: PZOBO with K = 100,000 inner steps and Q = 10,000 directions on a
// small quadratic, one valid ~100-byte request.  The round stops when the
// client's deadline passes, when the session is deleted, when the server's
// per-round budget is spent, or when SIGTERM's grace runs out; each time
// nothing is applied.  Meanwhile every read of the session, ListSessions
// and the dashboard's API answer at once (they read the last committed
// state, never waiting for the round).
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using Clock = std::chrono::steady_clock;

// Generous bounds: the reads take about a millisecond; the bounds only have
// to separate "answers" from "waits for a round of minutes" on a loaded
// 2-core CI machine.
constexpr auto kReadBound = std::chrono::milliseconds(500);
constexpr auto kStopBound = std::chrono::milliseconds(1500);

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

FamilyCase Quadratic() {
  for (const FamilyCase& f : AllFamilyCases()) {
    if (f.name == "quadratic") return f;
  }
  return {};
}

// PZOBO with 10,000 directions of 100,000-step paths: ~2e9 gradient
// evaluations, minutes of one core.
v1::SessionSpec LongRoundSpec() {
  v1::SessionSpec spec = testing::SpecFor(Quadratic(), "pzobo", 7);
  spec.mutable_options()->set_inner_steps(100000);
  spec.mutable_options()->set_pz_directions(10000);
  return spec;
}

// The value of an unlabelled sample `name` on the server's /metrics.
double MetricValue(int port, const std::string& name) {
  const std::string page = testing::HttpGet(port, "/metrics");
  for (absl::string_view line : absl::StrSplit(page, '\n')) {
    if (absl::StartsWith(line, name + " ")) {
      double v = 0.0;
      if (absl::SimpleAtod(line.substr(name.size() + 1), &v)) return v;
    }
  }
  return -1.0;
}

// Polls (no sleeping as synchronization: each poll is an HTTP round trip)
// until `done` holds or `limit` passes; returns whether it held.
template <typename Pred>
bool PollUntil(Pred done, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  while (Clock::now() < end) {
    if (done()) return true;
  }
  return done();
}

class LongRoundE2e : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> flags) {
    server_ = std::make_unique<ServerProcess>(std::move(flags));
    ASSERT_TRUE(server_->started()) << server_->banner();
    stub_ = v1::F2obo::NewStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
    v1::CreateSessionRequest create;
    create.set_session_id("long");
    *create.mutable_spec() = LongRoundSpec();
    grpc::ClientContext ctx;
    v1::SessionInfo info;
    const grpc::Status s = stub_->CreateSession(&ctx, create, &info);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Starts step 1 of "long" on its own thread, with a client deadline of
  // `deadline_seconds` (0: none), and waits until the server is running it.
  void StartLongStep(double deadline_seconds) {
    step_thread_ = std::thread([this, deadline_seconds] {
      grpc::ClientContext ctx;
      if (deadline_seconds > 0) {
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(static_cast<int>(deadline_seconds * 1000)));
      }
      const v1::StepRequest req = RequestFor(Quadratic(), "long", 1);
      v1::StepReply reply;
      const auto start = Clock::now();
      step_status_ = stub_->Step(&ctx, req, &reply);
      step_seconds_ = Seconds(Clock::now() - start);
      step_done_.store(true);
    });
    ASSERT_TRUE(PollUntil(
        [&] { return MetricValue(server_->metrics_port(), "f2obo_rpc_in_flight") >= 1.0; },
        std::chrono::milliseconds(10000)))
        << "the step never started";
  }

  void JoinStep() {
    if (step_thread_.joinable()) step_thread_.join();
  }

  int64_t NextT() {
    grpc::ClientContext ctx;
    v1::GetSessionRequest req;
    req.set_session_id("long");
    v1::SessionInfo info;
    const grpc::Status s = stub_->GetSession(&ctx, req, &info);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return info.next_t();
  }

  // The server's idle again: no handler is running (the round stopped).
  bool Idle() {
    return PollUntil(
        [&] { return MetricValue(server_->metrics_port(), "f2obo_rpc_in_flight") == 0.0; },
        kStopBound);
  }

  void TearDown() override { JoinStep(); }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::F2obo::Stub> stub_;
  std::thread step_thread_;
  std::atomic<bool> step_done_{false};
  grpc::Status step_status_;
  double step_seconds_ = 0.0;
};

TEST_F(LongRoundE2e, ReadsAnswerWhileARoundRunsAndTheDeadlineStopsItWithNothingApplied) {
  StartServer({});
  StartLongStep(/*deadline_seconds=*/3.0);

  // Every read of the busy session, and of the whole server, answers now.
  const auto timed = [&](const char* what, auto call) {
    const auto start = Clock::now();
    const grpc::Status s = call();
    const auto took = Clock::now() - start;
    EXPECT_TRUE(s.ok()) << what << ": " << s.error_message();
    EXPECT_LT(took, kReadBound) << what << " waited " << Seconds(took) << " s for the round";
  };
  timed("GetSession", [&] {
    grpc::ClientContext ctx;
    v1::GetSessionRequest req;
    req.set_session_id("long");
    v1::SessionInfo info;
    grpc::Status s = stub_->GetSession(&ctx, req, &info);
    EXPECT_EQ(info.next_t(), 1);
    return s;
  });
  timed("GetDecision", [&] {
    grpc::ClientContext ctx;
    v1::GetDecisionRequest req;
    req.set_session_id("long");
    v1::Decision d;
    grpc::Status s = stub_->GetDecision(&ctx, req, &d);
    EXPECT_EQ(d.t(), 1);
    EXPECT_EQ(d.x_size(), 3);
    return s;
  });
  timed("ListSessions", [&] {
    grpc::ClientContext ctx;
    v1::ListSessionsResponse list;
    grpc::Status s = stub_->ListSessions(&ctx, v1::ListSessionsRequest(), &list);
    EXPECT_EQ(list.sessions_size(), 1);
    return s;
  });
  timed("dashboard /api/sessions", [&] {
    const std::string page = testing::HttpGet(server_->metrics_port(), "/api/sessions");
    EXPECT_THAT(page, HasSubstr("200 OK"));
    EXPECT_THAT(page, HasSubstr("\"long\""));
    return grpc::Status::OK;
  });
  // The reads overlapped the round: it was still running after them.
  EXPECT_FALSE(step_done_.load()) << "the round ended before the reads; the test proves nothing";

  JoinStep();
  EXPECT_EQ(step_status_.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
      << step_status_.error_message();
  EXPECT_LT(step_seconds_, 3.0 + Seconds(kStopBound));
  // The server stopped the round (within a second of the deadline), and
  // the step was not applied.
  EXPECT_TRUE(Idle()) << "the round kept running after the client's deadline";
  EXPECT_EQ(NextT(), 1);
}

TEST_F(LongRoundE2e, TheRoundBudgetRefusesTheStepWithResourceExhaustedNamingTheFlag) {
  StartServer({"--round_budget_seconds=0.5"});
  StartLongStep(/*deadline_seconds=*/0);
  JoinStep();
  EXPECT_EQ(step_status_.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << step_status_.error_message();
  EXPECT_THAT(step_status_.error_message(), HasSubstr("--round_budget_seconds"));
  EXPECT_THAT(step_status_.error_message(), HasSubstr("session state unchanged"));
  EXPECT_GE(step_seconds_, 0.5);
  EXPECT_LT(step_seconds_, 0.5 + Seconds(kStopBound));
  EXPECT_EQ(NextT(), 1);
}

TEST_F(LongRoundE2e, DeleteStopsTheRoundOfItsSessionAndAnswersAtOnce) {
  StartServer({});
  StartLongStep(/*deadline_seconds=*/0);
  const auto start = Clock::now();
  grpc::ClientContext ctx;
  v1::DeleteSessionRequest req;
  req.set_session_id("long");
  v1::DeleteSessionResponse resp;
  const grpc::Status deleted = stub_->DeleteSession(&ctx, req, &resp);
  EXPECT_TRUE(deleted.ok()) << deleted.error_message();
  EXPECT_LT(Clock::now() - start, kStopBound);
  JoinStep();
  EXPECT_FALSE(step_status_.ok());
  EXPECT_THAT(step_status_.error_message(), HasSubstr("deleted"));
  grpc::ClientContext get_ctx;
  v1::GetSessionRequest get;
  get.set_session_id("long");
  v1::SessionInfo info;
  EXPECT_EQ(stub_->GetSession(&get_ctx, get, &info).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(LongRoundE2e, CancellingAStepsStreamStopsItsRoundWithNothingApplied) {
  StartServer({});
  grpc::ClientContext ctx;
  auto stream = stub_->Steps(&ctx);
  ASSERT_TRUE(stream->Write(RequestFor(Quadratic(), "long", 1)));
  ASSERT_TRUE(
      PollUntil([&] { return MetricValue(server_->metrics_port(), "f2obo_rpc_in_flight") >= 1.0; },
                std::chrono::milliseconds(10000)));
  ctx.TryCancel();
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Idle()) << "the round kept running after its stream was cancelled";
  EXPECT_EQ(NextT(), 1);
}

TEST_F(LongRoundE2e, AGroupStepsDeadlineStopsEveryMembersRound) {
  StartServer({});
  v1::CreateGroupRequest create;
  create.set_group_id("g");
  *create.mutable_spec() = LongRoundSpec();
  for (const char* name : {"a", "b"}) {
    v1::GroupMember* m = create.add_members();
    m->set_name(name);
    m->set_algorithm("pzobo");
  }
  {
    grpc::ClientContext ctx;
    v1::GroupInfo info;
    const grpc::Status s = stub_->CreateGroup(&ctx, create, &info);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const v1::StepRequest one = RequestFor(Quadratic(), "g", 1);
  v1::GroupStepRequest req;
  req.set_group_id("g");
  req.set_t(1);
  *req.mutable_upper() = one.upper();
  *req.mutable_inner() = one.inner();
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  v1::GroupStepReply reply;
  const auto start = Clock::now();
  EXPECT_EQ(stub_->StepGroup(&ctx, req, &reply).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(1) + kStopBound);
  // Both members' rounds stopped (the first at the deadline, the second at
  // its first question), and neither step was applied.
  EXPECT_TRUE(Idle()) << "a member's round kept running after the deadline";
  for (const char* member : {"g.a", "g.b"}) {
    grpc::ClientContext get_ctx;
    v1::GetSessionRequest get;
    get.set_session_id(member);
    v1::SessionInfo info;
    ASSERT_TRUE(stub_->GetSession(&get_ctx, get, &info).ok());
    EXPECT_EQ(info.next_t(), 1) << member;
  }
}

TEST_F(LongRoundE2e, SigtermDuringTheRoundExitsCleanlyWithinTheGraceAndTheStepIsNotApplied) {
  // A store, so that what was applied is what a restart finds.
  StartServer({"--shutdown_grace_seconds=2"});
  StartLongStep(/*deadline_seconds=*/0);
  const auto start = Clock::now();
  EXPECT_EQ(server_->Stop(SIGTERM), 0) << server_->Stderr();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2) + kStopBound);
  JoinStep();
  EXPECT_EQ(step_status_.error_code(), grpc::StatusCode::UNAVAILABLE)
      << step_status_.error_message();

  ServerProcess restarted({}, server_->data_dir());
  ASSERT_TRUE(restarted.started()) << restarted.banner();
  auto stub = v1::F2obo::NewStub(
      grpc::CreateChannel(restarted.target(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::GetSessionRequest req;
  req.set_session_id("long");
  v1::SessionInfo info;
  const grpc::Status s = stub->GetSession(&ctx, req, &info);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(info.next_t(), 1);
}

}  // namespace
}  // namespace f2obo
