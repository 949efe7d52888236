// A group step is all members or none.  Every member's
// round is prepared, then one store transaction holds them all, then they
// all become current.  Faults are injected at the server's fault points
// (server/fault_points.h; the fault-injection build, picked by
// ServerProcess when F2OBO_TEST_FAIL_AT or F2OBO_TEST_CRASH_AT is set), so
// no test depends on timing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ScopedEnv;
using testing::ServerProcess;
using testing::SpecFor;

const char* const kMembers[] = {"f2obo", "af2obo", "sf2obo", "obbo"};

v1::CreateGroupRequest Group(const FamilyCase& f) {
  v1::CreateGroupRequest req;
  req.set_group_id("cmp");
  *req.mutable_spec() = SpecFor(f, "f2obo", 11);
  for (const char* a : kMembers) {
    v1::GroupMember* m = req.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  return req;
}

v1::GroupStepRequest Step(const FamilyCase& f, int64_t t) {
  const v1::StepRequest single = RequestFor(f, "", t);
  v1::GroupStepRequest req;
  req.set_group_id("cmp");
  req.set_t(t);
  *req.mutable_upper() = single.upper();
  *req.mutable_inner() = single.inner();
  return req;
}

// One StepGroup attempt, no retry (the server may die in it).
grpc::Status StepOnce(client::Client& c, const v1::GroupStepRequest& req,
                      v1::GroupStepReply* reply) {
  auto ctx = c.NewContext();
  return c.stub().StepGroup(ctx.get(), req, reply);
}

// Each member's next_t and decision x, in member order.
struct Members {
  std::vector<int64_t> next_t;
  std::vector<std::vector<double>> x;
};
Members Read(client::Client& c) {
  Members out;
  for (const char* a : kMembers) {
    const std::string id = std::string("cmp.") + a;
    absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    out.next_t.push_back(info.ok() ? info->next_t() : -1);
    absl::StatusOr<v1::Decision> d = c.GetDecision(id);
    out.x.push_back(d.ok() ? std::vector<double>(d->x().begin(), d->x().end())
                           : std::vector<double>{});
  }
  return out;
}

// A member's round failing (here the third member's, after the first two
// were prepared) fails the whole step, naming that member, and no member
// changed: before, the first two applied the step and the group drifted
// apart for good.
TEST(GroupStep, AFailingMemberRoundChangesNoMember) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  Members before;
  {
    ScopedEnv fail("F2OBO_TEST_FAIL_AT", "group_step_prepared:cmp.sf2obo");
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateGroup(Group(f)).ok());
    before = Read(c);
    ASSERT_EQ(before.next_t, std::vector<int64_t>(4, 1));
    v1::GroupStepReply reply;
    const grpc::Status s = StepOnce(c, Step(f, 1), &reply);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("cmp.sf2obo"));
    EXPECT_THAT(s.error_message(), HasSubstr("applied to no member"));
    const Members after = Read(c);
    EXPECT_EQ(after.next_t, before.next_t);
    EXPECT_EQ(after.x, before.x);
    EXPECT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);
  }
  // Nor in the store: restarted without the fault, the group is at t = 1
  // and steps as one.
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const Members restarted = Read(c);
  EXPECT_EQ(restarted.next_t, before.next_t);
  EXPECT_EQ(restarted.x, before.x);
  v1::GroupStepReply reply;
  ASSERT_TRUE(StepOnce(c, Step(f, 1), &reply).ok());
  for (const v1::MemberStepResult& m : reply.members()) EXPECT_EQ(m.code(), 0) << m.message();
  EXPECT_EQ(Read(c).next_t, std::vector<int64_t>(4, 2));
}

// The store transaction failing (injected before it commits) changes no
// member either, in memory or on disk.
TEST(GroupStep, AFailedStoreWriteChangesNoMember) {
  const FamilyCase f = AllFamilyCases()[0];
  ScopedEnv fail("F2OBO_TEST_FAIL_AT", "group_step_before_commit:cmp");
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  ASSERT_TRUE(c.CreateGroup(Group(f)).ok());
  const Members before = Read(c);
  v1::GroupStepReply reply;
  const grpc::Status s = StepOnce(c, Step(f, 1), &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INTERNAL) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("applied to no member"));
  const Members after = Read(c);
  EXPECT_EQ(after.next_t, before.next_t);
  EXPECT_EQ(after.x, before.x);
}

// kill -9 between the store's write and the reply: after a restart every
// member has the step (none without it), and the retry is answered from
// each member's reply cache, the same decisions, nothing applied twice.
TEST(GroupStep, KilledAfterItsWriteBeforeItsAckEveryMemberHasTheStep) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateGroup(Group(f)).ok());
    v1::GroupStepReply reply;
    ASSERT_TRUE(StepOnce(c, Step(f, 1), &reply).ok());
    server.Stop(SIGKILL);
  }
  {
    ScopedEnv crash("F2OBO_TEST_CRASH_AT", "group_step_after_commit:cmp");
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    v1::GroupStepReply reply;
    ASSERT_FALSE(StepOnce(c, Step(f, 2), &reply).ok()) << "the server did not die";
    EXPECT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);  // dead already
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const Members after = Read(c);
  EXPECT_EQ(after.next_t, std::vector<int64_t>(4, 3));
  v1::GroupStepReply retry;
  ASSERT_TRUE(StepOnce(c, Step(f, 2), &retry).ok());
  ASSERT_EQ(retry.members_size(), 4);
  for (int i = 0; i < 4; ++i) {
    const v1::MemberStepResult& m = retry.members(i);
    ASSERT_EQ(m.code(), 0) << m.message();
    EXPECT_TRUE(m.reply().replayed()) << m.session_id();
    EXPECT_EQ(std::vector<double>(m.reply().x().begin(), m.reply().x().end()), after.x[i]);
  }
  EXPECT_EQ(Read(c).next_t, std::vector<int64_t>(4, 3));
}

// kill -9 after every round was prepared, before the write: after a
// restart no member has the step, and the retry applies it to all.
TEST(GroupStep, KilledBeforeItsWriteNoMemberHasTheStep) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  Members before;
  {
    ScopedEnv crash("F2OBO_TEST_CRASH_AT", "group_step_before_commit:cmp");
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateGroup(Group(f)).ok());
    before = Read(c);
    v1::GroupStepReply reply;
    ASSERT_FALSE(StepOnce(c, Step(f, 1), &reply).ok()) << "the server did not die";
    EXPECT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const Members after = Read(c);
  EXPECT_EQ(after.next_t, before.next_t);
  EXPECT_EQ(after.x, before.x);
  v1::GroupStepReply retry;
  ASSERT_TRUE(StepOnce(c, Step(f, 1), &retry).ok());
  for (const v1::MemberStepResult& m : retry.members()) {
    ASSERT_EQ(m.code(), 0) << m.message();
    EXPECT_FALSE(m.reply().replayed()) << m.session_id();
  }
  EXPECT_EQ(Read(c).next_t, std::vector<int64_t>(4, 2));
}

// No fault injected: a member whose round outlasts the call's deadline
// (PZOBO with 10,000 directions of 100,000-step paths, minutes of one core)
// after a member whose round finished (F2OBO, milliseconds).  The step
// fails DEADLINE_EXCEEDED as a whole and the finished member did not apply
// it either; before, it did, and the two could never step together again.
TEST(GroupStep, AMemberStoppedByTheDeadlineLeavesTheFinishedMemberUnchanged) {
  const FamilyCase f = AllFamilyCases()[0];  // quadratic
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  v1::CreateGroupRequest req;
  req.set_group_id("cmp");
  *req.mutable_spec() = SpecFor(f, "f2obo", 7);
  v1::GroupMember* fast = req.add_members();
  fast->set_name("fast");
  fast->set_algorithm("f2obo");
  v1::GroupMember* slow = req.add_members();
  slow->set_name("slow");
  slow->set_algorithm("pzobo");
  slow->mutable_options()->set_inner_steps(100000);
  slow->mutable_options()->set_pz_directions(10000);
  ASSERT_TRUE(c.CreateGroup(req).ok());
  absl::StatusOr<v1::Decision> before = c.GetDecision("cmp.fast");
  ASSERT_TRUE(before.ok()) << before.status();
  auto ctx = c.NewContext();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  v1::GroupStepReply reply;
  const grpc::Status s = c.stub().StepGroup(ctx.get(), Step(f, 1), &reply);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  for (const char* id : {"cmp.fast", "cmp.slow"}) {
    absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->next_t(), 1) << id;
  }
  absl::StatusOr<v1::Decision> after = c.GetDecision("cmp.fast");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(std::vector<double>(after->x().begin(), after->x().end()),
            std::vector<double>(before->x().begin(), before->x().end()));
}

// The production server contains no fault injection; the
// variables that drive the test build mean nothing to it (nor are they
// named anywhere in its binary), while the test build does read them.
TEST(GroupStep, TheProductionServerHoldsNoFaultInjection) {
  const auto contents = [](const char* path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string production = contents(F2OBO_SERVER_PATH);
  ASSERT_FALSE(production.empty());
  EXPECT_EQ(production.find("F2OBO_TEST_"), std::string::npos);
  EXPECT_NE(contents(F2OBO_FAULT_SERVER_PATH).find("F2OBO_TEST_CRASH_AT"), std::string::npos);
}

TEST(GroupStep, TheProductionServerIgnoresTheFaultVariables) {
  const FamilyCase f = AllFamilyCases()[0];
  ScopedEnv binary("F2OBO_SERVER_BINARY", F2OBO_SERVER_PATH);
  ScopedEnv crash("F2OBO_TEST_CRASH_AT", "create_group_before_commit");
  ScopedEnv fail("F2OBO_TEST_FAIL_AT", "group_step_prepared");
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  ASSERT_TRUE(c.CreateGroup(Group(f)).ok());
  v1::GroupStepReply reply;
  ASSERT_TRUE(StepOnce(c, Step(f, 1), &reply).ok());
  EXPECT_EQ(Read(c).next_t, std::vector<int64_t>(4, 2));
}

}  // namespace
}  // namespace f2obo
