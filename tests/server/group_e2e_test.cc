// Side-by-side groups over real gRPC: one upload, every member advanced,
// each exactly as it would run alone.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::AllFamilyCases;
using testing::FamilyCase;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

const char* const kAlgorithms[] = {"f2obo", "af2obo", "sf2obo", "obbo"};

v1::CreateGroupRequest FourMemberGroup(const FamilyCase& f) {
  v1::CreateGroupRequest req;
  req.set_group_id("cmp");
  *req.mutable_spec() = SpecFor(f, "f2obo", 11);
  for (const char* a : kAlgorithms) {
    v1::GroupMember* m = req.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  req.mutable_members(0)->mutable_options()->set_inner_steps(3);  // a per-member override
  return req;
}

v1::GroupStepRequest GroupRequest(const FamilyCase& f, int64_t t) {
  const v1::StepRequest single = RequestFor(f, "", t);
  v1::GroupStepRequest req;
  req.set_group_id("cmp");
  req.set_t(t);
  *req.mutable_upper() = single.upper();
  *req.mutable_inner() = single.inner();
  return req;
}

TEST(Groups, EachOfFourMembersFollowsExactlyItsLoneSessionTrajectory) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo
  const v1::CreateGroupRequest create = FourMemberGroup(f);
  v1::GroupInfo info;
  {
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().CreateGroup(ctx.get(), create, &info).ok());
  }
  ASSERT_EQ(info.members_size(), 4);
  EXPECT_EQ(info.members(0).session_id(), "cmp.f2obo");
  EXPECT_EQ(info.members(0).spec().options().inner_steps(), 3);

  // Lone reference sessions from the members' filled-in specs.
  std::vector<std::unique_ptr<Session>> lone;
  for (const v1::SessionInfo& m : info.members()) {
    lone.push_back(*Session::Create(*ToSessionConfig(m.spec())));
  }
  constexpr int kSteps = 60;
  auto ctx = c.NewContext();
  auto stream = c.stub().StepsGroup(ctx.get());
  for (int t = 1; t <= kSteps; ++t) {
    const v1::GroupStepRequest req = GroupRequest(f, t);
    v1::GroupStepReply reply;
    if (t % 2 == 0) {  // alternate the unary and the streaming RPC
      auto unary_ctx = c.NewContext();
      ASSERT_TRUE(c.stub().StepGroup(unary_ctx.get(), req, &reply).ok());
    } else {
      ASSERT_TRUE(stream->Write(req));
      ASSERT_TRUE(stream->Read(&reply));
    }
    ASSERT_EQ(reply.members_size(), 4);
    const StepData data{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")};
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(lone[i]->Step(data).ok());
      ASSERT_EQ(reply.members(i).code(), 0) << reply.members(i).message();
      const auto& x = reply.members(i).reply().x();
      ASSERT_EQ(std::vector<double>(x.begin(), x.end()),
                std::vector<double>(lone[i]->state().x.data(),
                                    lone[i]->state().x.data() + lone[i]->state().x.size()))
          << kAlgorithms[i] << " diverged from its lone run at t = " << t;
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // A retried group step re-applies nothing.
  v1::GroupStepReply again;
  auto retry_ctx = c.NewContext();
  ASSERT_TRUE(c.stub().StepGroup(retry_ctx.get(), GroupRequest(f, kSteps), &again).ok());
  for (const v1::MemberStepResult& m : again.members()) EXPECT_TRUE(m.reply().replayed());
}

TEST(Groups, ABadBatchFailsTheWholeGroupAndAdvancesNoMember) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[2];
  v1::GroupInfo info;
  auto ctx = c.NewContext();
  ASSERT_TRUE(c.stub().CreateGroup(ctx.get(), FourMemberGroup(f), &info).ok());
  v1::GroupStepRequest bad = GroupRequest(f, 1);
  bad.mutable_inner()->set_labels(0, 99);
  v1::GroupStepReply reply;
  auto step_ctx = c.NewContext();
  const grpc::Status s = c.stub().StepGroup(step_ctx.get(), bad, &reply);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("label[0] = 99"));
  for (const char* a : kAlgorithms) {
    EXPECT_EQ(c.GetSession(std::string("cmp.") + a)->next_t(), 1) << a;
  }
}

TEST(Groups, InvalidGroupsAreRefusedAllOrNothing) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[2];
  v1::CreateGroupRequest req = FourMemberGroup(f);
  req.mutable_members(2)->set_algorithm("nope");
  v1::GroupInfo info;
  auto ctx = c.NewContext();
  const grpc::Status s = c.stub().CreateGroup(ctx.get(), req, &info);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("members[2] (sf2obo)"));
  EXPECT_EQ(c.ListSessions()->sessions_size(), 0);  // members 0, 1 were removed
}

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

}  // namespace
}  // namespace f2obo
