// End to end: the real f2obo-server binary on loopback, driven over gRPC.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <thread>

#include "client/client.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllAlgorithms;
using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::KeepReadOptions;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;
using testing::StepFor;

constexpr int kSteps = 200;

// The core library's trajectory x_2 .. x_{T+1} for the same spec and batches.
std::vector<Vector> CoreTrajectory(const FamilyCase& f, const v1::SessionSpec& spec, int steps) {
  auto config = ToSessionConfig(spec);
  EXPECT_TRUE(config.ok()) << config.status();
  auto session = *Session::Create(*config);
  std::vector<Vector> xs;
  for (int t = 1; t <= steps; ++t) {
    // Through the wire format and back, exactly as the server sees it.
    const v1::StepRequest req = RequestFor(f, "", t);
    StepData data{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")};
    EXPECT_TRUE(session->Step(data).ok());
    xs.push_back(session->state().x);
  }
  return xs;
}

bool BitEqual(const google::protobuf::RepeatedField<double>& a, const Vector& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * b.size()) == 0;
}

class ServiceE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess({"--metrics_threads=2"});
    ASSERT_TRUE(server_->started()) << server_->banner();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  client::Client NewClient() { return client::Client({server_->target()}); }
  static ServerProcess* server_;
};
ServerProcess* ServiceE2e::server_ = nullptr;

TEST_F(ServiceE2e, EveryAlgorithmAndFamilyMatchesTheCoreBitForBitThroughStepAndSteps) {
  client::Client c = NewClient();
  for (const FamilyCase& f : AllFamilyCases()) {
    for (const std::string& algorithm : AllAlgorithms()) {
      SCOPED_TRACE(f.name + " / " + algorithm);
      const v1::SessionSpec spec = SpecFor(f, algorithm, 7);
      const std::vector<Vector> expected = CoreTrajectory(f, spec, kSteps);
      v1::CreateSessionRequest create;
      *create.mutable_spec() = spec;
      const auto unary = c.CreateSession(create);
      const auto streamed = c.CreateSession(create);
      ASSERT_TRUE(unary.ok() && streamed.ok()) << unary.status() << streamed.status();

      for (int t = 1; t <= kSteps; ++t) {
        const auto reply = c.Step(RequestFor(f, unary->session_id(), t));
        ASSERT_TRUE(reply.ok()) << "t = " << t << ": " << reply.status();
        ASSERT_EQ(reply->t(), t);
        ASSERT_TRUE(BitEqual(reply->x(), expected[t - 1])) << "Step diverged at t = " << t;
      }
      auto ctx = c.NewContext();
      auto stream = c.stub().Steps(ctx.get());
      for (int t = 1; t <= kSteps; ++t) {
        ASSERT_TRUE(stream->Write(RequestFor(f, streamed->session_id(), t)));
        v1::StepReply reply;
        ASSERT_TRUE(stream->Read(&reply));
        ASSERT_EQ(reply.t(), t);
        ASSERT_TRUE(BitEqual(reply.x(), expected[t - 1])) << "Steps diverged at t = " << t;
      }
      stream->WritesDone();
      EXPECT_TRUE(stream->Finish().ok());
      const auto decision = c.GetDecision(streamed->session_id());
      ASSERT_TRUE(decision.ok());
      EXPECT_EQ(decision->t(), kSteps + 1);
      EXPECT_TRUE(BitEqual(decision->x(), expected.back()));
      EXPECT_TRUE(c.DeleteSession(unary->session_id()).ok());
      EXPECT_TRUE(c.DeleteSession(streamed->session_id()).ok());
    }
  }
}

// svrb, pzobo, pzobo_s with non-default options: the options travel over
// the wire (GetSession reports them back) and every family's trajectory
// matches the core bit for bit; svrb refuses a problem above
// max_explicit_dim at CreateSession, naming the option.
TEST_F(ServiceE2e, SvrbAndPzoboMatchTheCoreBitForBitWithTheirOptionsOverTheWire) {
  client::Client c = NewClient();
  constexpr int kShortSteps = 30;
  for (const FamilyCase& f : AllFamilyCases()) {
    for (const std::string algorithm : {"svrb", "pzobo", "pzobo_s"}) {
      SCOPED_TRACE(f.name + " / " + algorithm);
      v1::SessionSpec spec = SpecFor(f, algorithm, 11);
      v1::AlgorithmOptions* o = spec.mutable_options();
      o->set_sample_rows(5);
      o->set_max_explicit_dim(64);
      o->set_jacobian_clip(3.0);
      o->set_hessian_floor(0.05);
      o->set_pz_directions(3);
      o->set_pz_smoothing(0.003);
      KeepReadOptions(&spec);  // each algorithm's (a server refuses the others)
      const std::vector<Vector> expected = CoreTrajectory(f, spec, kShortSteps);
      v1::CreateSessionRequest create;
      *create.mutable_spec() = spec;
      const auto created = c.CreateSession(create);
      ASSERT_TRUE(created.ok()) << created.status();
      const auto info = c.GetSession(created->session_id());
      ASSERT_TRUE(info.ok()) << info.status();
      // GetSession reports the options the algorithm reads, as set.
      const v1::AlgorithmOptions& back = info->spec().options();
      if (algorithm == "svrb") {
        EXPECT_EQ(back.max_explicit_dim(), 64);
        EXPECT_EQ(back.jacobian_clip(), 3.0);
        EXPECT_EQ(back.hessian_floor(), 0.05);
        EXPECT_FALSE(back.has_pz_directions()) << "svrb does not read it";
      } else {
        EXPECT_EQ(back.pz_directions(), 3);
        EXPECT_EQ(back.pz_smoothing(), 0.003);
        EXPECT_FALSE(back.has_jacobian_clip()) << algorithm << " does not read it";
      }
      EXPECT_EQ(back.sample_rows(), algorithm == "pzobo" ? 0 : 5);
      for (int t = 1; t <= kShortSteps; ++t) {
        const auto reply = c.Step(RequestFor(f, created->session_id(), t));
        ASSERT_TRUE(reply.ok()) << "t = " << t << ": " << reply.status();
        ASSERT_TRUE(BitEqual(reply->x(), expected[t - 1])) << "diverged at t = " << t;
      }
      EXPECT_TRUE(c.DeleteSession(created->session_id()).ok());
    }
  }
  v1::CreateSessionRequest big;
  v1::SessionSpec* spec = big.mutable_spec();
  spec->mutable_family()->set_name("quadratic");
  spec->mutable_family()->set_x_dim(3);
  spec->mutable_family()->set_y_dim(300);
  spec->set_algorithm("svrb");
  const auto refused = c.CreateSession(big);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("options.max_explicit_dim: svrb builds explicit"));
  spec->mutable_options()->set_max_explicit_dim(300);
  const auto allowed = c.CreateSession(big);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_TRUE(c.DeleteSession(allowed->session_id()).ok());
}

TEST_F(ServiceE2e, AStepSentTwiceIsAppliedOnceAndASkippedIndexNamesTheExpectedOne) {
  client::Client c = NewClient();
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo
  v1::CreateSessionRequest create;
  create.set_session_id("idempotent");
  *create.mutable_spec() = SpecFor(f, "sf2obo", 3);
  ASSERT_TRUE(c.CreateSession(create).ok());
  const auto first = c.Step(RequestFor(f, "idempotent", 1));
  const auto second = c.Step(RequestFor(f, "idempotent", 2));
  ASSERT_TRUE(first.ok() && second.ok());
  const auto again = c.Step(RequestFor(f, "idempotent", 2));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replayed());
  EXPECT_FALSE(second->replayed());
  EXPECT_THAT(again->x(), ::testing::ElementsAreArray(second->x()));
  const auto info = c.GetSession("idempotent");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->next_t(), 3);

  const auto skipped = c.Step(RequestFor(f, "idempotent", 5));
  ASSERT_FALSE(skipped.ok());
  EXPECT_EQ(skipped.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(skipped.status().message()), HasSubstr("expects t = 3"));
  EXPECT_EQ(c.GetSession("idempotent")->next_t(), 3);
  EXPECT_TRUE(c.DeleteSession("idempotent").ok());
}

TEST_F(ServiceE2e, ThirtyTwoSessionsFromEightThreadsMatchSequentialTrajectories) {
  const std::vector<FamilyCase> families = AllFamilyCases();
  const std::vector<std::string> algorithms = AllAlgorithms();
  constexpr int kSessions = 32, kThreads = 8, kLen = 40;
  struct Job {
    FamilyCase f;
    v1::SessionSpec spec;
    std::string id;
    std::vector<Vector> expected;
    std::vector<std::string> failures;
  };
  std::vector<Job> jobs(kSessions);
  client::Client c = NewClient();
  for (int i = 0; i < kSessions; ++i) {
    jobs[i].f = families[i % families.size()];
    jobs[i].spec = SpecFor(jobs[i].f, algorithms[i % algorithms.size()], 100 + i);
    jobs[i].expected = CoreTrajectory(jobs[i].f, jobs[i].spec, kLen);
    v1::CreateSessionRequest create;
    *create.mutable_spec() = jobs[i].spec;
    const auto info = c.CreateSession(create);
    ASSERT_TRUE(info.ok());
    jobs[i].id = info->session_id();
  }
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      client::Client mine = NewClient();
      // Interleave: each thread advances its sessions round-robin.
      for (int t = 1; t <= kLen; ++t) {
        for (int i = th; i < kSessions; i += kThreads) {
          const auto r = mine.Step(RequestFor(jobs[i].f, jobs[i].id, t));
          if (!r.ok() || !BitEqual(r->x(), jobs[i].expected[t - 1])) {
            jobs[i].failures.push_back("t=" + std::to_string(t));
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Job& j : jobs) {
    EXPECT_TRUE(j.failures.empty()) << j.id << " " << j.failures.front();
    EXPECT_TRUE(c.DeleteSession(j.id).ok());
  }
}

TEST_F(ServiceE2e, WatchMetricsDeliversEveryStepInOrderWithExactMetrics) {
  client::Client c = NewClient();
  const FamilyCase f = AllFamilyCases()[0];  // quadratic: exact metrics every step
  v1::CreateSessionRequest create;
  create.set_session_id("watched");
  *create.mutable_spec() = SpecFor(f, "af2obo", 1);
  ASSERT_TRUE(c.CreateSession(create).ok());
  for (int t = 1; t <= 30; ++t) ASSERT_TRUE(c.Step(RequestFor(f, "watched", t)).ok());
  grpc::ClientContext ctx;
  v1::WatchMetricsRequest req;
  req.set_session_id("watched");
  auto reader = c.stub().WatchMetrics(&ctx, req);
  double blreg = 0.0;
  for (int t = 1; t <= 30; ++t) {
    v1::StepMetrics m;
    ASSERT_TRUE(reader->Read(&m));
    ASSERT_EQ(m.t(), t);
    ASSERT_TRUE(m.has_exact()) << m.exact_skipped_reason();
    blreg += m.exact().bilevel().regret_term();
    EXPECT_NEAR(m.exact().running().bilevel().blreg(), blreg, 1e-12 * std::max(1.0, blreg));
    EXPECT_EQ(m.exact().bilevel().has_drift(), t > 1);  // needs the previous step's batches
    // A well-conditioned quadratic: both solves reach their tolerances.
    EXPECT_TRUE(m.exact().bilevel().inner_converged())
        << m.exact().bilevel().inner_relative_residual();
    EXPECT_TRUE(m.exact().bilevel().cg_converged()) << m.exact().bilevel().cg_relative_residual();
    EXPECT_LT(m.exact().bilevel().cg_relative_residual(), 1e-10);
    // The step t-1 solve behind variation and drift says so too.
    EXPECT_EQ(m.exact().bilevel().has_previous_inner_converged(), t > 1);
    if (t > 1) {
      EXPECT_TRUE(m.exact().bilevel().previous_inner_converged());
    }
    EXPECT_EQ(m.exact().running().bilevel().unconverged_steps(), 0);
    EXPECT_EQ(m.exact().running().bilevel().unconverged_drift_steps(), 0);
    EXPECT_EQ(m.exact().running().bilevel().drift_steps(), t - 1);
  }
  ctx.TryCancel();
  const auto info = c.GetSession("watched");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->metrics().evaluated_steps(), 30);
  EXPECT_EQ(info->metrics().bilevel().unconverged_steps(), 0);
  EXPECT_TRUE(c.DeleteSession("watched").ok());
}

TEST_F(ServiceE2e, PrometheusEndpointServesValidSeriesIncludingPerSessionRegret) {
  client::Client c = NewClient();
  const FamilyCase f = AllFamilyCases()[0];
  v1::CreateSessionRequest create;
  create.set_session_id("scraped");
  *create.mutable_spec() = SpecFor(f, "f2obo", 1);
  ASSERT_TRUE(c.CreateSession(create).ok());
  for (int t = 1; t <= 5; ++t) ASSERT_TRUE(c.Step(RequestFor(f, "scraped", t)).ok());
  // Wait (by watching, not sleeping) until step 5's metrics are published.
  {
    grpc::ClientContext ctx;
    v1::WatchMetricsRequest req;
    req.set_session_id("scraped");
    req.set_after_t(4);
    auto reader = c.stub().WatchMetrics(&ctx, req);
    v1::StepMetrics m;
    ASSERT_TRUE(reader->Read(&m));
    ASSERT_EQ(m.t(), 5);
    ctx.TryCancel();
  }
  const std::string http = testing::HttpGet(server_->metrics_port(), "/metrics");
  EXPECT_THAT(http, HasSubstr("200 OK"));
  EXPECT_THAT(http, HasSubstr("f2obo_session_blreg{session_id=\"scraped\"}"));
  EXPECT_THAT(http, HasSubstr("f2obo_rpc_requests_total{method=\"Step\"}"));
  EXPECT_THAT(http, HasSubstr("f2obo_session_step{session_id=\"scraped\"} 5"));
  const std::string body = http.substr(http.find("\r\n\r\n") + 4);
  FILE* promtool = popen(PROMTOOL_PATH " check metrics > /dev/null 2>&1", "w");
  ASSERT_NE(promtool, nullptr);
  fwrite(body.data(), 1, body.size(), promtool);
  EXPECT_EQ(pclose(promtool), 0) << body;
  EXPECT_TRUE(c.DeleteSession("scraped").ok());
  EXPECT_THAT(testing::HttpGet(server_->metrics_port(), "/metrics"),
              ::testing::Not(HasSubstr("session_id=\"scraped\"")));
}

TEST_F(ServiceE2e, HealthServiceReportsServing) {
  client::Client c = NewClient();
  const auto healthy = c.Healthy();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(*healthy);
}

// The health service is the server's own sync one (server/health_service.h),
// with gRPC's default service's answers: "" is known, other names are not,
// and a watch sees NOT_SERVING when the server begins to stop.
TEST(ServerHealth, CheckAndWatchAnswerAsGrpcsDefaultServiceAndWatchSeesTheStop) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto channel = grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials());
  auto health = grpc::health::v1::Health::NewStub(channel);
  {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("no.such.Service");
    grpc::health::v1::HealthCheckResponse out;
    EXPECT_EQ(health->Check(&ctx, req, &out).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("no.such.Service");
    auto unknown = health->Watch(&ctx, req);
    grpc::health::v1::HealthCheckResponse out;
    ASSERT_TRUE(unknown->Read(&out));
    EXPECT_EQ(out.status(), grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN);
    ctx.TryCancel();
    EXPECT_EQ(unknown->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  grpc::ClientContext ctx;
  auto watch = health->Watch(&ctx, grpc::health::v1::HealthCheckRequest());
  grpc::health::v1::HealthCheckResponse out;
  ASSERT_TRUE(watch->Read(&out));
  EXPECT_EQ(out.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  std::thread stopper([&] { EXPECT_EQ(server.Stop(SIGTERM), 0); });
  ASSERT_TRUE(watch->Read(&out));
  EXPECT_EQ(out.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  EXPECT_FALSE(watch->Read(&out));
  EXPECT_TRUE(watch->Finish().ok());
  stopper.join();
}

TEST(ServerLifecycle, SigtermFinishesTheRoundInFlightAndExitsZero) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo
  bool replied = false;
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started()) << server.banner();
    client::Client c({server.target()});
    v1::CreateSessionRequest create;
    create.set_session_id("s");
    *create.mutable_spec() = SpecFor(f, "af2obo", 1);
    create.mutable_spec()->mutable_options()->set_delta_y(1e-12);  // long rounds
    create.mutable_spec()->mutable_options()->set_delta_z(1e-12);
    create.mutable_spec()->mutable_options()->set_max_inner_iterations(20000);
    ASSERT_TRUE(c.CreateSession(create).ok());
    auto ctx = c.NewContext();
    auto stream = c.stub().Steps(ctx.get());
    ASSERT_TRUE(stream->Write(RequestFor(f, "s", 1)));
    v1::StepReply reply;
    ASSERT_TRUE(stream->Read(&reply));
    // Step 2 is on its way (or already running) when SIGTERM arrives.
    ASSERT_TRUE(stream->Write(RequestFor(f, "s", 2)));
    std::thread stopper([&] { EXPECT_EQ(server.Stop(SIGTERM), 0); });
    replied = stream->Read(&reply);
    const grpc::Status status = stream->Finish();
    stopper.join();
    if (replied) {
      EXPECT_EQ(reply.t(), 2);
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    }
  }
  // Whatever the timing: a step is durable exactly when it was acknowledged.
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const auto info = c.GetSession("s");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->next_t(), replied ? 3 : 2);
}

TEST(ServerLifecycle, RefusesBadFlagsWithAClearMessage) {
  ServerProcess server({"--metrics_threads=0"});
  EXPECT_FALSE(server.started());
  EXPECT_EQ(server.Stop(SIGKILL), 1);
}

}  // namespace
}  // namespace f2obo
