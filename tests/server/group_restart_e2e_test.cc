// Groups across restarts and kill -9 over real gRPC: a group survives a
// restart, a create killed before or after its commit leaves nothing or the
// whole group, a delete stays deleted, a stored group missing a member is
// reported rather than served half.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/group_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::CreateGroup;
using ::testing::ElementsAre;
using testing::FamilyCase;
using testing::FourMemberGroup;
using testing::GetGroup;
using testing::GroupRequest;
using ::testing::HasSubstr;
using testing::kAlgorithms;
using ::testing::Not;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SessionIds;
using testing::SpecFor;
using testing::Vec;
TEST(Groups, SurviveARestart) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    v1::GroupInfo info;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().CreateGroup(ctx.get(), FourMemberGroup(f), &info).ok());
    v1::GroupStepReply reply;
    auto step_ctx = c.NewContext();
    ASSERT_TRUE(c.stub().StepGroup(step_ctx.get(), GroupRequest(f, 1), &reply).ok());
    server.Stop(SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  v1::GetGroupRequest get;
  get.set_group_id("cmp");
  v1::GroupInfo info;
  auto ctx = c.NewContext();
  ASSERT_TRUE(c.stub().GetGroup(ctx.get(), get, &info).ok());
  ASSERT_EQ(info.members_size(), 4);
  for (const v1::SessionInfo& m : info.members()) EXPECT_EQ(m.next_t(), 2);
}

// CreateGroup is one store transaction (members and group
// record), like ImportGroup.  The server is killed (F2OBO_TEST_CRASH_AT, a
// SIGKILL at a fixed point of the server's code, no timing) after every
// member was built and before that transaction commits: after a restart
// nothing of the group exists, so a retried CreateGroup succeeds.
TEST(Groups, CreateGroupKilledBeforeItsCommitLeavesNothingAndARetrySucceeds) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo
  {
    setenv("F2OBO_TEST_CRASH_AT", "create_group_before_commit", 1);
    ServerProcess server({}, dir);
    unsetenv("F2OBO_TEST_CRASH_AT");
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    const grpc::Status s = CreateGroup(c, FourMemberGroup(f));
    ASSERT_FALSE(s.ok()) << "the server did not die in CreateGroup";
    EXPECT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);  // it was dead already
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  EXPECT_EQ(GetGroup(c, "cmp").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(SessionIds(c), ::testing::IsEmpty()) << "members outlived a crash before their group";
  v1::GroupInfo info;
  const grpc::Status retry = CreateGroup(c, FourMemberGroup(f), &info);
  ASSERT_TRUE(retry.ok()) << retry.error_message();
  ASSERT_EQ(info.members_size(), 4);
  v1::GroupStepReply reply;
  auto step_ctx = c.NewContext();
  ASSERT_TRUE(c.stub().StepGroup(step_ctx.get(), GroupRequest(f, 1), &reply).ok());
  for (const v1::MemberStepResult& m : reply.members()) EXPECT_EQ(m.code(), 0) << m.message();
}

// The other side of that transaction: killed right after it commits (before
// the reply), the whole group is there after a restart, and stepping it
// advances every member.
TEST(Groups, CreateGroupKilledAfterItsCommitKeepsTheWholeGroup) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[2];
  {
    setenv("F2OBO_TEST_CRASH_AT", "create_group_after_commit", 1);
    ServerProcess server({}, dir);
    unsetenv("F2OBO_TEST_CRASH_AT");
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_FALSE(CreateGroup(c, FourMemberGroup(f)).ok()) << "the server did not die";
    EXPECT_EQ(server.Stop(SIGKILL), 128 + SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  v1::GroupInfo info;
  ASSERT_TRUE(GetGroup(c, "cmp", &info).ok());
  ASSERT_EQ(info.members_size(), 4);
  EXPECT_EQ(CreateGroup(c, FourMemberGroup(f)).error_code(), grpc::StatusCode::ALREADY_EXISTS);
  v1::GroupStepReply reply;
  auto step_ctx = c.NewContext();
  ASSERT_TRUE(c.stub().StepGroup(step_ctx.get(), GroupRequest(f, 1), &reply).ok());
  ASSERT_EQ(reply.members_size(), 4);
  for (const v1::MemberStepResult& m : reply.members()) EXPECT_EQ(m.code(), 0) << m.message();
}
TEST(Groups, ADeletedGroupStaysDeletedAfterARestart) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
    v1::CreateGroupRequest other = FourMemberGroup(f);
    other.set_group_id("kept");
    ASSERT_TRUE(CreateGroup(c, other).ok());
    ASSERT_TRUE(c.DeleteGroup("cmp").ok());
    server.Stop(SIGKILL);
  }
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started());
  EXPECT_THAT(server.Stderr(), Not(HasSubstr("NOT LOADED")));
  client::Client c({server.target()});
  EXPECT_EQ(GetGroup(c, "cmp").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(SessionIds(c), ElementsAre("kept.af2obo", "kept.f2obo", "kept.obbo", "kept.sf2obo"));
  v1::GroupInfo info;
  ASSERT_TRUE(GetGroup(c, "kept", &info).ok());
  EXPECT_EQ(info.members_size(), 4);
}

// Removes a stored session's row, as if it had been lost.
void DropStoredSession(const std::string& db_path, const std::string& id) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  const std::string sql = "DELETE FROM sessions WHERE id = '" + id + "'";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST(Groups, AStoredGroupMissingAMemberIsReportedAndNotServedHalf) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    ASSERT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
    ASSERT_EQ(server.Stop(SIGTERM), 0);
  }
  DropStoredSession(dir + "/f2obo.sqlite3", "cmp.sf2obo");
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started()) << server.Stderr();
  EXPECT_THAT(server.Stderr(),
              HasSubstr("NOT LOADED: group 'cmp' is not served: its member session "
                        "'cmp.sf2obo' could not be loaded"));
  client::Client c({server.target()});
  const grpc::Status get = GetGroup(c, "cmp");
  EXPECT_EQ(get.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(get.error_message(), HasSubstr("'cmp.sf2obo'"));
  v1::GroupStepReply reply;
  auto step_ctx = c.NewContext();
  EXPECT_EQ(c.stub().StepGroup(step_ctx.get(), GroupRequest(f, 1), &reply).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  for (const char* m : {"cmp.f2obo", "cmp.af2obo", "cmp.obbo"}) {
    EXPECT_EQ(c.GetSession(m)->next_t(), 1) << m;  // no member was stepped
    EXPECT_EQ(c.DeleteSession(m).code(), absl::StatusCode::kFailedPrecondition) << m;
  }
  // DeleteGroup clears what remains, for good.
  const absl::StatusOr<v1::DeleteGroupResponse> deleted = c.DeleteGroup("cmp");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_THAT(deleted->session_ids(), ElementsAre("cmp.f2obo", "cmp.af2obo", "cmp.obbo"));
  EXPECT_THAT(SessionIds(c), ::testing::IsEmpty());
  ASSERT_EQ(server.Stop(SIGTERM), 0);
  ServerProcess again({}, dir);
  ASSERT_TRUE(again.started());
  client::Client after({again.target()});
  EXPECT_EQ(GetGroup(after, "cmp").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(SessionIds(after), ::testing::IsEmpty());
}
}  // namespace
}  // namespace f2obo
