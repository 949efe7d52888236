// Side-by-side groups over real gRPC: one upload, every member advanced,
// each exactly as it would run alone; refusals all or nothing; deletes and
// limits (restarts and kills: group_restart_e2e_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "client/client.h"
#include "core/bilevel/bilevel_state.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
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

  // Lone references from the members' filled-in specs: a core session and
  // a lone session on the same server, both fed the same batches.
  std::vector<std::unique_ptr<Session>> lone;
  std::vector<std::string> lone_ids;
  for (const v1::SessionInfo& m : info.members()) {
    lone.push_back(*Session::Create(*ToSessionConfig(m.spec())));
    v1::CreateSessionRequest alone;
    alone.set_session_id("lone-" + m.session_id().substr(4));
    *alone.mutable_spec() = m.spec();
    ASSERT_TRUE(c.CreateSession(alone).ok());
    lone_ids.push_back(alone.session_id());
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
      v1::StepRequest alone_req;
      alone_req.set_session_id(lone_ids[i]);
      alone_req.set_t(t);
      *alone_req.mutable_upper() = req.upper();
      *alone_req.mutable_inner() = req.inner();
      const absl::StatusOr<v1::StepReply> alone = c.Step(alone_req);
      ASSERT_TRUE(alone.ok()) << alone.status();
      ASSERT_EQ(reply.members(i).code(), 0) << reply.members(i).message();
      const std::vector<double> x = Vec(reply.members(i).reply().x());
      // Bit for bit (operator== on doubles), against both references.
      ASSERT_EQ(x, Vec(lone[i]->state().x))
          << kAlgorithms[i] << " diverged from its lone core run at t = " << t;
      ASSERT_EQ(x, Vec(alone->x()))
          << kAlgorithms[i] << " diverged from its lone server session at t = " << t;
      // The whole decision (x, y, lambda) too, not only the reply's x.
      const absl::StatusOr<v1::Decision> member = c.GetDecision(info.members(i).session_id());
      const absl::StatusOr<v1::Decision> solo = c.GetDecision(lone_ids[i]);
      ASSERT_TRUE(member.ok() && solo.ok());
      ASSERT_EQ(member->t(), t + 1);
      ASSERT_EQ(Vec(member->x()), Vec(solo->x())) << kAlgorithms[i] << " t = " << t;
      ASSERT_EQ(Vec(member->y()), Vec(solo->y())) << kAlgorithms[i] << " t = " << t;
      ASSERT_EQ(Vec(member->y()), Vec(BilevelView(lone[i]->state()).y))
          << kAlgorithms[i] << " t = " << t;
      ASSERT_EQ(member->lambda(), solo->lambda()) << kAlgorithms[i] << " t = " << t;
      ASSERT_EQ(member->lambda(), BilevelView(lone[i]->state()).lambda)
          << kAlgorithms[i] << " t = " << t;
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // A retried group step re-applies nothing.
  v1::GroupStepReply again;
  auto retry_ctx = c.NewContext();
  ASSERT_TRUE(c.stub().StepGroup(retry_ctx.get(), GroupRequest(f, kSteps), &again).ok());
  for (const v1::MemberStepResult& m : again.members()) EXPECT_TRUE(m.reply().replayed());

  // The comparison is not vacuous: the members moved, and not alike.
  std::vector<std::vector<double>> xs;
  for (const v1::SessionInfo& m : info.members()) {
    xs.push_back(Vec(c.GetDecision(m.session_id())->x()));
  }
  const std::unique_ptr<Session> fresh = *Session::Create(*ToSessionConfig(info.members(0).spec()));
  EXPECT_NE(xs[0], Vec(fresh->state().x));
  for (int i = 1; i < 4; ++i) EXPECT_NE(xs[0], xs[i]) << kAlgorithms[i];
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

TEST(Groups, AMemberIdOverSixtyFourCharactersIsRefusedNamingIt) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  v1::CreateGroupRequest req = FourMemberGroup(AllFamilyCases()[2]);
  req.set_group_id(std::string(32, 'g'));                  // a valid group id
  req.mutable_members(1)->set_name(std::string(32, 'm'));  // a valid name: 65 together
  v1::GroupInfo info;
  auto ctx = c.NewContext();
  const grpc::Status s = c.stub().CreateGroup(ctx.get(), req, &info);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("members[1].name: the member's session id"));
  EXPECT_THAT(s.error_message(), HasSubstr("has 65 characters"));
  EXPECT_EQ(c.ListSessions()->sessions_size(), 0);
}

v1::SessionExport ExportAs(client::Client& c, const std::string& id, const std::string& as) {
  v1::ExportSessionRequest req;
  req.set_session_id(id);
  v1::SessionExport out;
  auto ctx = c.NewContext();
  EXPECT_TRUE(c.stub().ExportSession(ctx.get(), req, &out).ok()) << id;
  out.set_session_id(as);
  return out;
}

grpc::Status ImportGroup(client::Client& c, const std::vector<v1::SessionExport>& members) {
  v1::ImportGroupRequest req;
  req.set_group_id("imp");
  for (const v1::SessionExport& m : members) *req.add_members() = m;
  v1::GroupInfo info;
  auto ctx = c.NewContext();
  return c.stub().ImportGroup(ctx.get(), req, &info);
}

// ImportGroup refuses members of different families or
// problem classes, as CreateGroup cannot make them (its members share one
// spec): such a group's steps would apply to one member and be refused by
// the other.  Nothing is imported; members alike in both import.
TEST(Groups, ImportGroupRefusesMembersOfDifferentFamiliesOrClassesAndImportsNothing) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const auto create = [&](const std::string& id, const v1::SessionSpec& spec) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_spec() = spec;
    ASSERT_TRUE(c.CreateSession(req).ok()) << id;
  };
  create("quad", SpecFor(AllFamilyCases()[0], "f2obo", 1));
  create("quad2", SpecFor(AllFamilyCases()[0], "af2obo", 2));
  create("logi", SpecFor(AllFamilyCases()[2], "f2obo", 1));
  v1::SessionSpec simple;
  simple.mutable_family()->set_name("least_squares");
  simple.mutable_family()->set_features(AllFamilyCases()[0].family.x_dim());
  simple.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  create("simple", simple);

  grpc::Status s = ImportGroup(c, {ExportAs(c, "quad", "imp.a"), ExportAs(c, "logi", "imp.b")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("members[1].spec.family: {name: \"logistic_hpo\""));
  EXPECT_THAT(s.error_message(), HasSubstr("differs from members[0]'s {name: \"quadratic\""));
  s = ImportGroup(c, {ExportAs(c, "quad", "imp.a"), ExportAs(c, "quad2", "imp.b"),
                      ExportAs(c, "simple", "imp.c")});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("members[2].spec.problem_class: 'simple_bilevel' differs from "
                        "members[0]'s 'bilevel'"));
  EXPECT_EQ(GetGroup(c, "imp").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(SessionIds(c), ::testing::UnorderedElementsAre("quad", "quad2", "logi", "simple"));

  // One family and class, different algorithms: a group, stepped as one.
  ASSERT_TRUE(ImportGroup(c, {ExportAs(c, "quad", "imp.a"), ExportAs(c, "quad2", "imp.b")}).ok());
  v1::GroupStepRequest step = GroupRequest(AllFamilyCases()[0], 1);
  step.set_group_id("imp");
  v1::GroupStepReply reply;
  auto ctx = c.NewContext();
  ASSERT_TRUE(c.stub().StepGroup(ctx.get(), step, &reply).ok());
  ASSERT_EQ(reply.members_size(), 2);
  for (const v1::MemberStepResult& m : reply.members()) EXPECT_EQ(m.code(), 0) << m.message();
}

TEST(Groups, DeleteGroupDeletesTheGroupAndEveryMemberAndUnknownOnesAreNotFound) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  ASSERT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
  v1::CreateSessionRequest lone;
  lone.set_session_id("bystander");
  *lone.mutable_spec() = SpecFor(f, "f2obo", 1);
  ASSERT_TRUE(c.CreateSession(lone).ok());

  const absl::StatusOr<v1::DeleteGroupResponse> deleted = c.DeleteGroup("cmp");
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_THAT(deleted->session_ids(),
              ElementsAre("cmp.f2obo", "cmp.af2obo", "cmp.sf2obo", "cmp.obbo"));
  EXPECT_THAT(SessionIds(c), ElementsAre("bystander"));
  EXPECT_EQ(GetGroup(c, "cmp").error_code(), grpc::StatusCode::NOT_FOUND);
  v1::GroupStepReply reply;
  auto step_ctx = c.NewContext();
  EXPECT_EQ(c.stub().StepGroup(step_ctx.get(), GroupRequest(f, 1), &reply).error_code(),
            grpc::StatusCode::NOT_FOUND);

  const absl::Status again = c.DeleteGroup("cmp").status();
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(again.message(), HasSubstr("group 'cmp' not found"));
  EXPECT_EQ(c.DeleteGroup("bystander").status().code(), absl::StatusCode::kNotFound);

  // The id and the member ids are free again.
  EXPECT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
}

TEST(Groups, AMemberCannotBeDeletedAloneTheErrorNamesItsGroup) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  ASSERT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
  const absl::Status s = c.DeleteSession("cmp.sf2obo");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("member of group 'cmp'"));
  EXPECT_THAT(s.message(), HasSubstr("DeleteGroup"));
  EXPECT_TRUE(c.GetSession("cmp.sf2obo").ok());
  v1::GroupInfo info;
  ASSERT_TRUE(GetGroup(c, "cmp", &info).ok());
  EXPECT_EQ(info.members_size(), 4);
  // Lone sessions are deleted as before, even with a '.' in their id.
  v1::CreateSessionRequest lone;
  lone.set_session_id("cmpx.f2obo");
  *lone.mutable_spec() = SpecFor(f, "f2obo", 1);
  ASSERT_TRUE(c.CreateSession(lone).ok());
  EXPECT_TRUE(c.DeleteSession("cmpx.f2obo").ok());
  EXPECT_EQ(c.DeleteSession("cmpx.f2obo").code(), absl::StatusCode::kNotFound);
}

TEST(Groups, MembersCountAgainstMaxSessionsAndATooLargeGroupCreatesNothing) {
  ServerProcess server({"--max_sessions=5"});
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  for (const char* id : {"a", "b"}) {
    v1::CreateSessionRequest lone;
    lone.set_session_id(id);
    *lone.mutable_spec() = SpecFor(f, "f2obo", 1);
    ASSERT_TRUE(c.CreateSession(lone).ok());
  }
  const grpc::Status s = CreateGroup(c, FourMemberGroup(f));  // 2 + 4 > 5
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("max_sessions = 5"));
  EXPECT_THAT(s.error_message(), HasSubstr("group of 4 sessions"));
  EXPECT_THAT(SessionIds(c), ElementsAre("a", "b"));
  EXPECT_EQ(GetGroup(c, "cmp").error_code(), grpc::StatusCode::NOT_FOUND);
  // Three members fit exactly; then not even a lone session does.
  v1::CreateGroupRequest three = FourMemberGroup(f);
  three.mutable_members()->RemoveLast();
  ASSERT_TRUE(CreateGroup(c, three).ok());
  v1::CreateSessionRequest more;
  *more.mutable_spec() = SpecFor(f, "f2obo", 1);
  EXPECT_EQ(c.CreateSession(more).status().code(), absl::StatusCode::kResourceExhausted);
  // Deleting the group frees its three places.
  ASSERT_TRUE(c.DeleteGroup("cmp").ok());
  EXPECT_TRUE(c.CreateSession(more).ok());
}

// The value of the /metrics sample `series` (name{labels}), or -1.
double Scrape(const ServerProcess& server, const std::string& series) {
  const std::string text = testing::HttpGet(server.metrics_port(), "/metrics");
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(Groups, MemberStepOutcomesAreCountedByCode) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  // Exported before the first group step.
  EXPECT_EQ(Scrape(server, "f2obo_group_member_steps_total{code=\"OK\"}"), 0);
  ASSERT_TRUE(CreateGroup(c, FourMemberGroup(f)).ok());
  ASSERT_TRUE(c.StepGroup(GroupRequest(f, 1)).ok());
  // One member runs ahead alone: at t = 3 it applies, the others expect 2.
  v1::StepRequest ahead = RequestFor(f, "cmp.f2obo", 2);
  ASSERT_TRUE(c.Step(ahead).ok());
  const absl::StatusOr<v1::GroupStepReply> mixed = c.StepGroup(GroupRequest(f, 3));
  ASSERT_TRUE(mixed.ok()) << mixed.status();
  EXPECT_EQ(mixed->members(0).code(), 0);
  EXPECT_EQ(mixed->members(1).code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));
  // A group step refused as a whole is no member outcome.
  v1::GroupStepRequest bad = GroupRequest(f, 2);
  bad.clear_inner();
  EXPECT_FALSE(c.StepGroup(bad).ok());
  EXPECT_EQ(Scrape(server, "f2obo_group_member_steps_total{code=\"OK\"}"), 5);
  EXPECT_EQ(Scrape(server, "f2obo_group_member_steps_total{code=\"FAILED_PRECONDITION\"}"), 3);
}

}  // namespace
}  // namespace f2obo
