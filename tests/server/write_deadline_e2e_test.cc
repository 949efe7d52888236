// Over real gRPC: CreateSession, CreateGroup and
// DeleteGroup honour the call's deadline in the store's queue.  The store's writer is held by a
// fault (F2OBO_TEST_DELAY_AT, the fault-injection build: a large write, no timing luck needed); the
// server says on stderr when it holds it.
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
using testing::ScopedEnv;
using testing::ServerProcess;
using testing::SpecFor;

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
    ASSERT_EQ(server.AwaitStderr(marker, 2, std::chrono::seconds(30)), 2u)
        << "the writer never took the step";
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

v1::CreateGroupRequest GroupOfTwo(const std::string& id) {
  v1::CreateGroupRequest req;
  req.set_group_id(id);
  *req.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 3);
  for (const char* name : {"a", "b"}) {
    v1::GroupMember* m = req.add_members();
    m->set_name(name);
    m->set_algorithm("f2obo");
  }
  return req;
}

grpc::Status CreateGroupWithin(client::Client& c, const std::string& id,
                               std::chrono::milliseconds deadline) {
  auto ctx = c.NewContext();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  v1::GroupInfo info;
  return c.stub().CreateGroup(ctx.get(), GroupOfTwo(id), &info);
}

grpc::Status DeleteGroupWithin(client::Client& c, const std::string& id,
                               std::chrono::milliseconds deadline) {
  auto ctx = c.NewContext();
  ctx->set_deadline(std::chrono::system_clock::now() + deadline);
  v1::DeleteGroupRequest req;
  req.set_group_id(id);
  v1::DeleteGroupResponse out;
  return c.stub().DeleteGroup(ctx.get(), req, &out);
}

// The group RPCs too: CreateGroup and DeleteGroup queued behind the held
// writer past their deadline are withdrawn and never happen, also after
// kill -9 and a restart (before: the group was created, or deleted, once
// the writer came to it, after the client had been told DEADLINE_EXCEEDED).
TEST(WriteDeadline, AGroupCreateOrDeleteStillQueuedWhenItsDeadlinePassesDoesNotHappen) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  const std::string marker = "delaying store_write of 'held'";
  {
    ScopedEnv delay("F2OBO_TEST_DELAY_AT", "store_write:held@3000");
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateSession(CreateRequest("held")).ok());  // held once (its create)
    ASSERT_TRUE(c.CreateGroup(GroupOfTwo("kept")).ok());
    // Holds the writer with held's step t, until the server says so.
    const auto hold = [&](int64_t t) {
      std::thread step([&c, f, t] { EXPECT_TRUE(c.Step(RequestFor(f, "held", t)).ok()); });
      EXPECT_EQ(server.AwaitStderr(marker, t + 1, std::chrono::seconds(30)),
                static_cast<size_t>(t + 1))
          << "the writer never took the step";
      return step;
    };
    std::thread step = hold(1);
    const grpc::Status create = CreateGroupWithin(c, "late", std::chrono::milliseconds(500));
    EXPECT_EQ(create.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << create.error_message();
    step.join();
    step = hold(2);
    const grpc::Status del = DeleteGroupWithin(c, "kept", std::chrono::milliseconds(500));
    EXPECT_EQ(del.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << del.error_message();
    step.join();
    EXPECT_EQ(c.GetGroup("late").status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(c.GetSession("late.a").status().code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(c.GetGroup("kept").ok());
    server.Stop(SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  EXPECT_EQ(c.GetGroup("late").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.GetSession("late.a").status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(c.GetGroup("kept").ok());
  EXPECT_TRUE(c.GetSession("kept.a").ok());
  // The retries do it.
  EXPECT_TRUE(c.CreateGroup(GroupOfTwo("late")).ok());
  EXPECT_TRUE(c.DeleteGroup("kept").ok());
}

}  // namespace
}  // namespace f2obo
