// Issue 25 item 3, over real gRPC: CreateSession honours the call's
// deadline in the store's queue.  The store's writer is held by a fault
// (F2OBO_TEST_DELAY_AT, the fault-injection build: a large write, no
// timing luck needed); the server says on stderr when it holds it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <string>
#include <thread>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

v1::CreateSessionRequest CreateRequest(const std::string& id) {
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  *req.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 3);
  return req;
}

grpc::Status CreateWithin(client::Client& c, const std::string& id,
                          std::chrono::milliseconds deadline) {
  auto ctx = c.NewContext();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  v1::SessionInfo info;
  return c.stub().CreateSession(ctx.get(), CreateRequest(id), &info);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Queued behind the held writer past its deadline: withdrawn, never
// written (before: created once the writer came to it, after the client
// had been told DEADLINE_EXCEEDED), also after kill -9 and a restart.
TEST(WriteDeadline, ACreateStillQueuedWhenItsDeadlinePassesDoesNotHappen) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  {
    ScopedEnv delay("F2OBO_TEST_DELAY_AT", "store_write:held@3000");
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateSession(CreateRequest("held")).ok());  // held once (its create)
    std::thread step([&] { EXPECT_TRUE(c.Step(RequestFor(f, "held", 1)).ok()); });
    const std::string marker = "delaying store_write of 'held'";
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Count(server.Stderr(), marker) < 2 && std::chrono::steady_clock::now() < limit) {
    }
    ASSERT_EQ(Count(server.Stderr(), marker), 2u) << "the writer never took the step";
    const grpc::Status late = CreateWithin(c, "late", std::chrono::milliseconds(500));
    EXPECT_EQ(late.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << late.error_message();
    step.join();  // the writer is free again
    EXPECT_EQ(c.GetSession("late").status().code(), absl::StatusCode::kNotFound);
    server.Stop(SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  EXPECT_EQ(c.GetSession("late").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(c.CreateSession(CreateRequest("late")).ok());  // the retry creates it
}

// The other case the README names: a write the writer has begun completes
// although the client's deadline passed; the retry tells (ALREADY_EXISTS).
TEST(WriteDeadline, ACreateBegunBeforeItsDeadlinePassedCompletesAndTheRetrySaysSo) {
  ScopedEnv delay("F2OBO_TEST_DELAY_AT", "store_write:slow@1500");
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const grpc::Status first = CreateWithin(c, "slow", std::chrono::milliseconds(300));
  EXPECT_EQ(first.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << first.error_message();
  const grpc::Status retry = CreateWithin(c, "slow", std::chrono::seconds(30));
  EXPECT_EQ(retry.error_code(), grpc::StatusCode::ALREADY_EXISTS) << retry.error_message();
  EXPECT_TRUE(c.GetSession("slow").ok());
}

}  // namespace
}  // namespace f2obo
