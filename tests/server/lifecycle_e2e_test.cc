// Graceful shutdown of the real server under load: SIGTERM while eight
// Steps streams are running.  The server must exit 0, every step whose
// reply a client received must survive the restart, and no step may be
// applied without its reply having been sent or applied twice.  Also the
// server's own accounting of running RPCs (f2obo_rpc_in_flight) and of a
// watch the client ends.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "core/state.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllAlgorithms;
using testing::AllFamilyCases;
using testing::CoreState;
using testing::FamilyCase;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

v1::SessionSpec NoMetrics(v1::SessionSpec spec) {
  spec.mutable_metrics()->set_exact_every(0);  // keeps the state deterministic
  return spec;
}

TEST(GracefulShutdown, SigtermDuringEightStreamsKeepsEveryAcknowledgedStepExactlyOnce) {
  constexpr int kStreams = 8;
  constexpr int64_t kAckedBeforeSignal = 5;  // per stream, before SIGTERM
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo, small
  const std::vector<std::string> algorithms = AllAlgorithms();
  const std::string dir = testing::MakeTempDir();
  ASSERT_FALSE(dir.empty());

  std::vector<std::string> ids;
  std::vector<v1::SessionSpec> specs;
  std::vector<int64_t> acked(kStreams, 0);  // last t whose reply arrived
  std::vector<grpc::Status> endings(kStreams);
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started()) << server.banner();
    client::Client c({server.target()});
    for (int i = 0; i < kStreams; ++i) {
      v1::CreateSessionRequest create;
      create.set_session_id("stream-" + std::to_string(i));
      *create.mutable_spec() = NoMetrics(SpecFor(f, algorithms[i % algorithms.size()], 11 + i));
      ASSERT_TRUE(c.CreateSession(create).ok()) << create.session_id();
      ids.push_back(create.session_id());
      specs.push_back(create.spec());
    }

    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::thread> streams;
    for (int i = 0; i < kStreams; ++i) {
      streams.emplace_back([&, i] {
        auto ctx = c.NewContext();
        auto stream = c.stub().Steps(ctx.get());
        v1::StepReply reply;
        // Lockstep: each request is sent once its predecessor was answered,
        // and never again, so the server cannot be asked to apply a step twice.
        for (int64_t t = 1; stream->Write(RequestFor(f, ids[i], t)) && stream->Read(&reply); ++t) {
          if (reply.t() != t || reply.replayed()) {
            ADD_FAILURE() << ids[i] << ": reply t " << reply.t() << " for step " << t;
            break;
          }
          std::lock_guard<std::mutex> lock(mu);
          acked[i] = t;
          cv.notify_all();
        }
        stream->WritesDone();
        const grpc::Status status = stream->Finish();
        std::lock_guard<std::mutex> lock(mu);
        endings[i] = status;
      });
    }
    {
      // Every stream is mid-flight: it has been answered several times and
      // its next request is on the way.
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        for (int64_t a : acked)
          if (a < kAckedBeforeSignal) return false;
        return true;
      });
    }
    EXPECT_EQ(server.Stop(SIGTERM), 0) << server.Stderr();
    for (std::thread& s : streams) s.join();
    for (int i = 0; i < kStreams; ++i) {
      // A stream ends only because the server stopped (refused: UNAVAILABLE,
      // or cancelled by the stop), never with a step error.
      EXPECT_TRUE(endings[i].error_code() == grpc::StatusCode::UNAVAILABLE ||
                  endings[i].error_code() == grpc::StatusCode::CANCELLED)
          << ids[i] << ": " << endings[i].error_code() << " " << endings[i].error_message();
      std::printf("%s: %lld steps acknowledged, ended with %d (%s)\n", ids[i].c_str(),
                  static_cast<long long>(acked[i]), endings[i].error_code(),
                  endings[i].error_message().c_str());
    }
    EXPECT_NE(server.Stderr().find("stopped"), std::string::npos) << server.Stderr();
  }

  // Restart on the same data directory: each session resumes right after
  // its last acknowledged step, in the state of exactly those steps.
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::Client c({server.target()});
  for (int i = 0; i < kStreams; ++i) {
    const auto info = c.GetSession(ids[i]);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->next_t(), acked[i] + 1) << ids[i];
    v1::ExportSessionRequest req;
    req.set_session_id(ids[i]);
    v1::SessionExport ex;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().ExportSession(ctx.get(), req, &ex).ok());
    const auto state = DeserializeCheckpoint(ex.state());
    ASSERT_TRUE(state.ok()) << state.status();
    const auto expected = CoreState(f, specs[i], acked[i]);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_TRUE(state->BitEquals(*expected))
        << ids[i] << " is not the state of steps 1.." << acked[i] << " applied once each";
  }
  EXPECT_EQ(server.Stop(SIGTERM), 0);
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + "-stderr.log");
}

// A client ending its WatchMetrics is how watches end: it is counted as a
// request, not as an error (it inflated f2obo_rpc_errors_total with
// CANCELLED), and the watch leaves f2obo_rpc_in_flight when it ends.
TEST(RpcMetrics, ClientCancelledWatchIsNotAnErrorAndLeavesTheInFlightGauge) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  const FamilyCase f = AllFamilyCases()[0];
  client::Client c({server.target()});
  v1::CreateSessionRequest create;
  create.set_session_id("w");
  *create.mutable_spec() = SpecFor(f, "f2obo", 3);
  ASSERT_TRUE(c.CreateSession(create).ok());
  ASSERT_TRUE(c.Step(RequestFor(f, "w", 1)).ok());

  auto ctx = c.NewContext();
  v1::WatchMetricsRequest watch;
  watch.set_session_id("w");
  auto reader = c.stub().WatchMetrics(ctx.get(), watch);
  v1::StepMetrics m;
  ASSERT_TRUE(reader->Read(&m));  // the handler is running (it sent this)
  EXPECT_EQ(m.t(), 1);
  const std::string during = testing::HttpGet(server.metrics_port(), "/metrics");
  EXPECT_NE(during.find("\nf2obo_rpc_in_flight 1\n"), std::string::npos) << during;

  ctx->TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  // The server notices the cancellation at its next poll of the watch;
  // wait for the handler to have finished (a condition, bounded).
  const std::string counted = "\nf2obo_rpc_requests_total{method=\"WatchMetrics\"} 1\n";
  const std::string idle = "\nf2obo_rpc_in_flight 0\n";
  std::string after;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    after = testing::HttpGet(server.metrics_port(), "/metrics");
  } while ((after.find(counted) == std::string::npos || after.find(idle) == std::string::npos) &&
           std::chrono::steady_clock::now() < deadline);
  ASSERT_NE(after.find(counted), std::string::npos) << after;
  EXPECT_NE(after.find(idle), std::string::npos) << after;
  EXPECT_EQ(after.find("f2obo_rpc_errors_total{method=\"WatchMetrics\""), std::string::npos)
      << after;
}

}  // namespace
}  // namespace f2obo
