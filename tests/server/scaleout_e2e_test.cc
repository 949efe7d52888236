// Scale-out behind a real consistent-hash proxy: three
// f2obo-server replicas behind nginx (its config from
// deploy/proxy/gen_proxy_config.py), every process started here on
// loopback.  Sessions spread over the replicas by their routing key, every
// step reaches the replica holding its session, trajectories equal a single
// server's bit for bit, and a replica killed with -9 makes only its own
// sessions UNAVAILABLE until it restarts, with no acknowledged step lost.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/proxy_process.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::FamilyCase;
using testing::ProxyProcess;
using testing::RequestFor;
using testing::ServerProcess;

constexpr int kReplicas = 3;
constexpr int kSessions = 60;
constexpr int kSteps = 6;

bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

std::string Id(int i) { return absl::StrFormat("scale-%02d", i); }

class ScaleOutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(replicas_.NotStarted(), "");
    proxy_ = std::make_unique<ProxyProcess>(replicas_.RingOf());
    const std::string error = proxy_->Start();
    ASSERT_EQ(error, "") << proxy_->config();
    client::ClientOptions opt{proxy_->target()};
    opt.max_attempts = 12;  // rides out a replica's restart
    via_proxy_ = std::make_unique<client::Client>(opt);
    reference_server_ = std::make_unique<ServerProcess>();
    ASSERT_TRUE(reference_server_->started());
    reference_ =
        std::make_unique<client::Client>(client::ClientOptions{reference_server_->target()});
    for (int i = 0; i < kSessions; ++i) {
      v1::CreateSessionRequest req;
      req.set_session_id(Id(i));
      *req.mutable_spec() = testing::SpecFor(family_, "f2obo", 1000 + i);
      req.mutable_spec()->mutable_metrics()->set_exact_every(0);
      ASSERT_TRUE(via_proxy_->CreateSession(req).ok()) << Id(i);
      ASSERT_TRUE(reference_->CreateSession(req).ok()) << Id(i);
    }
  }

  // Step t of session i through the proxy, checked bit for bit against the
  // same step on the reference server.
  void StepAndCompare(int i, int64_t t) {
    const v1::StepRequest req = RequestFor(family_, Id(i), t);
    absl::StatusOr<v1::StepReply> got = via_proxy_->Step(req);
    absl::StatusOr<v1::StepReply> want = reference_->Step(req);
    ASSERT_TRUE(got.ok()) << Id(i) << " t=" << t << ": " << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    EXPECT_EQ(got->t(), t);
    EXPECT_FALSE(got->replayed()) << Id(i) << " t=" << t;
    EXPECT_TRUE(SameBits(got->x(), want->x())) << Id(i) << " t=" << t;
  }

  const FamilyCase family_ = testing::AllFamilyCases()[2];  // logistic_hpo, small
  testing::ReplicaSet replicas_{kReplicas};
  std::unique_ptr<ProxyProcess> proxy_;
  std::unique_ptr<client::Client> via_proxy_;
  std::unique_ptr<ServerProcess> reference_server_;
  std::unique_ptr<client::Client> reference_;
};

TEST_F(ScaleOutTest, SessionsSpreadOverAllReplicasAndStepBitIdenticalToOneServer) {
  std::map<int, int> per_replica;
  for (int i = 0; i < kSessions; ++i) {
    const int holder = replicas_.Holder(Id(i));
    ASSERT_GE(holder, 0) << Id(i) << " is on no replica or on several";
    ++per_replica[holder];
  }
  for (int r = 0; r < kReplicas; ++r) {
    std::printf("replica %d holds %d sessions\n", r, per_replica[r]);
    EXPECT_GE(per_replica[r], 5) << "replica " << r << " holds " << per_replica[r] << " of "
                                 << kSessions << " sessions";
  }
  for (int t = 1; t <= kSteps; ++t) {
    for (int i = 0; i < kSessions; ++i) StepAndCompare(i, t);
  }
  // Every step reached the holder (and only it): the holder has applied all
  // of them, the final decision equals the single server's bit for bit.
  for (int i = 0; i < kSessions; ++i) {
    const int holder = replicas_.Holder(Id(i));
    ASSERT_GE(holder, 0) << Id(i);
    absl::StatusOr<v1::SessionInfo> info = replicas_.Direct(holder).GetSession(Id(i));
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->next_t(), kSteps + 1) << Id(i);
    absl::StatusOr<v1::Decision> got = replicas_.Direct(holder).GetDecision(Id(i));
    absl::StatusOr<v1::Decision> want = reference_->GetDecision(Id(i));
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_TRUE(SameBits(got->x(), want->x()) && SameBits(got->y(), want->y())) << Id(i);
  }
}

TEST_F(ScaleOutTest, KillNineMakesOnlyThatReplicasSessionsUnavailableUntilItRestarts) {
  for (int t = 1; t <= kSteps; ++t) {
    for (int i = 0; i < kSessions; ++i) StepAndCompare(i, t);
  }
  constexpr int kVictim = 1;
  std::vector<int> on_victim, elsewhere;
  for (int i = 0; i < kSessions; ++i)
    (replicas_.Holder(Id(i)) == kVictim ? on_victim : elsewhere).push_back(i);
  ASSERT_FALSE(on_victim.empty());
  ASSERT_EQ(replicas_.Kill(kVictim), 128 + SIGKILL);

  // Its sessions: UNAVAILABLE through the proxy (one attempt each), never
  // served by another replica.
  for (int i : on_victim) {
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-f2obo-session", Id(i));
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::StepReply reply;
    const grpc::Status s =
        via_proxy_->stub().Step(&ctx, RequestFor(family_, Id(i), kSteps + 1), &reply);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << Id(i) << ": " << s.error_message();
  }
  // The others keep stepping.
  for (int i : elsewhere) StepAndCompare(i, kSteps + 1);

  // Restarted on its data directory and port: its sessions resume where
  // their last acknowledged step left them, and continue bit for bit.
  ASSERT_TRUE(replicas_.StartAgain(kVictim)) << replicas_[kVictim].banner();
  for (int i : on_victim) {
    absl::StatusOr<v1::SessionInfo> info = via_proxy_->GetSession(Id(i));
    ASSERT_TRUE(info.ok()) << Id(i) << ": " << info.status();
    EXPECT_EQ(info->next_t(), kSteps + 1) << Id(i) << " lost or repeated an acknowledged step";
    StepAndCompare(i, kSteps + 1);
  }
  for (int i = 0; i < kSessions; ++i) StepAndCompare(i, kSteps + 2);
}

// Refusals of Step with UNAVAILABLE that `server` has counted.
double StepRefusals(const ServerProcess& server) {
  const std::string text = testing::HttpGet(server.metrics_port(), "/metrics");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "f2obo_rpc_errors_total{") &&
        absl::StrContains(line, "method=\"Step\"") && absl::StrContains(line, "UNAVAILABLE")) {
      return std::stod(std::string(line.substr(line.rfind(' ') + 1)));
    }
  }
  return 0;
}

// On a fenced key, a create, import or fork into an id the
// frozen copy still holds answers UNAVAILABLE (retry at the new owner), as
// the proto says, not ALREADY_EXISTS (which clients do not retry); nothing
// is created.
TEST(FenceTest, CreateImportAndForkIntoAFencedKeysExistingIdAnswerUnavailable) {
  ServerProcess server({"--replica_name=r0"});
  ASSERT_TRUE(server.started()) << server.banner();
  const FamilyCase family = testing::AllFamilyCases()[0];
  client::ClientOptions direct{server.target()};
  direct.max_attempts = 1;
  client::Client c(direct);
  for (const char* id : {"moving", "src"}) {
    v1::CreateSessionRequest create;
    create.set_session_id(id);
    *create.mutable_spec() = testing::SpecFor(family, "f2obo", 5);
    ASSERT_TRUE(c.CreateSession(create).ok()) << id;
  }
  v1::SessionExport exported;
  {
    v1::ExportSessionRequest req;
    req.set_session_id("moving");
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().ExportSession(ctx.get(), req, &exported).ok());
  }
  {
    v1::SetFenceRequest req;
    req.set_routing_key("moving");
    req.set_target("r1");
    v1::Fence out;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().SetFence(ctx.get(), req, &out).ok());
  }
  const auto expect_moved = [](const char* rpc, const grpc::Status& s) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << rpc << ": " << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "is moving to replica 'r1'"))
        << rpc << ": " << s.error_message();
  };
  v1::SessionInfo info;
  {
    v1::CreateSessionRequest req;
    req.set_session_id("moving");
    *req.mutable_spec() = testing::SpecFor(family, "f2obo", 5);
    auto ctx = c.NewContext();
    expect_moved("CreateSession", c.stub().CreateSession(ctx.get(), req, &info));
  }
  {
    v1::ImportSessionRequest req;
    *req.mutable_session() = exported;
    auto ctx = c.NewContext();
    expect_moved("ImportSession", c.stub().ImportSession(ctx.get(), req, &info));
  }
  {
    v1::ForkSessionRequest req;
    req.set_session_id("src");
    req.set_new_session_id("moving");
    auto ctx = c.NewContext();
    expect_moved("ForkSession", c.stub().ForkSession(ctx.get(), req, &info));
  }
  // An id of another key is created as usual.
  v1::CreateSessionRequest other;
  other.set_session_id("other");
  *other.mutable_spec() = testing::SpecFor(family, "f2obo", 5);
  EXPECT_TRUE(c.CreateSession(other).ok());
  const absl::StatusOr<v1::ListSessionsResponse> list = c.ListSessions();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->sessions_size(), 3);
}

// The client's retry budget covers a rebalance (fence -> proxy switch,
// deploy/README.md's runbook): the "moved" status is retried, same step
// index, past max_attempts for up to moved_retry_seconds, and the step is
// applied once when the key is served again (here: the fence lifted).
TEST(MovedRetryTest, AStepRetriesMovedPastMaxAttemptsAndIsAppliedOnceWhenServedAgain) {
  ServerProcess server({"--replica_name=r0"});
  ASSERT_TRUE(server.started()) << server.banner();
  const FamilyCase family = testing::AllFamilyCases()[2];
  client::ClientOptions direct{server.target()};
  direct.max_attempts = 1;
  client::Client admin(direct);
  v1::CreateSessionRequest create;
  create.set_session_id("moving");
  *create.mutable_spec() = testing::SpecFor(family, "f2obo", 5);
  ASSERT_TRUE(admin.CreateSession(create).ok());
  ASSERT_TRUE(admin.Step(RequestFor(family, "moving", 1)).ok());
  const auto fence = [&](bool set) {
    auto ctx = admin.NewContext();
    if (set) {
      v1::SetFenceRequest req;
      req.set_routing_key("moving");
      req.set_target("r1");
      v1::Fence out;
      return admin.stub().SetFence(ctx.get(), req, &out).ok();
    }
    v1::LiftFenceRequest req;
    req.set_routing_key("moving");
    v1::LiftFenceResponse out;
    return admin.stub().LiftFence(ctx.get(), req, &out).ok();
  };
  ASSERT_TRUE(fence(true));
  client::ClientOptions opt{server.target()};
  opt.max_attempts = 2;
  opt.initial_backoff_seconds = 0.01;
  opt.max_backoff_seconds = 0.02;
  {
    // Without the budget, "moved" is one more UNAVAILABLE: 2 attempts.
    client::ClientOptions no_budget = opt;
    no_budget.moved_retry_seconds = 0;
    absl::StatusOr<v1::StepReply> r =
        client::Client(no_budget).Step(RequestFor(family, "moving", 2));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_TRUE(client::IsMoved(r.status())) << r.status();
  }
  const double before = StepRefusals(server);
  opt.moved_retry_seconds = 60;
  client::Client retrying(opt);
  absl::StatusOr<v1::StepReply> got = absl::UnknownError("not run");
  std::thread stepper([&] { got = retrying.Step(RequestFor(family, "moving", 2)); });
  // Lift only once the client has been refused more often than
  // max_attempts would allow (polled from the server's own counter).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (StepRefusals(server) < before + 3 * opt.max_attempts &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval
  }
  EXPECT_GE(StepRefusals(server), before + 3 * opt.max_attempts);
  ASSERT_TRUE(fence(false));
  stepper.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->t(), 2);
  EXPECT_FALSE(got->replayed());
  absl::StatusOr<v1::SessionInfo> info = admin.GetSession("moving");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->next_t(), 3) << "the retried step was applied other than once";
}

}  // namespace
}  // namespace f2obo
