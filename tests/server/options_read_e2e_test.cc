// An option a user sets acts, or is refused.  A set option the
// session's algorithm does not read is INVALID_ARGUMENT naming the option
// and the algorithm, and nothing is created (a spec naming no algorithm
// gets the class default, which may not read what the previous default
// did: sf2obo has no beta_scaling).  Specs a server wrote (imports) keep
// working: their unread options never acted.  An import whose spec names
// no algorithm is its state's algorithm's.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "client/client.h"
#include "tests/server/e2e_client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

class OptionsReadE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started());
    client_ = std::make_unique<client::Client>(client::ClientOptions{server_.target()});
  }
  int Sessions() {
    const absl::StatusOr<v1::ListSessionsResponse> list = client_->ListSessions();
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? list->sessions_size() : -1;
  }
  void ExpectRefused(const absl::Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(needle));
  }

  ServerProcess server_;
  std::unique_ptr<client::Client> client_;
};

const FamilyCase& Ridge() {
  static const FamilyCase f = AllFamilyCases()[1];
  return f;
}

TEST_F(OptionsReadE2e, ASetOptionTheAlgorithmDoesNotReadIsRefusedAndCreatesNothing) {
  // No algorithm named: sf2obo, the bilevel default, has no beta_scaling.
  v1::CreateSessionRequest create;
  create.set_session_id("s");
  *create.mutable_spec() = SpecFor(Ridge(), "", 1);
  create.mutable_spec()->mutable_options()->set_beta_scaling("fixed");
  ExpectRefused(client_->CreateSession(create).status(),
                "options.beta_scaling: not read by algorithm 'sf2obo' (the bilevel class "
                "default); name an algorithm that reads it (f2obo, f2obo_sl, af2obo) or leave "
                "it unset");
  // Named: sobow reads no beta.
  *create.mutable_spec() = SpecFor(Ridge(), "sobow", 1);
  create.mutable_spec()->mutable_options()->set_beta(0.5);
  ExpectRefused(client_->CreateSession(create).status(),
                "options.beta: not read by algorithm 'sobow'; name an algorithm that reads it");
  // The simple class: ir_scg keeps no window.
  create.mutable_spec()->Clear();
  create.mutable_spec()->mutable_family()->set_name("least_squares");
  create.mutable_spec()->mutable_family()->set_features(4);
  create.mutable_spec()->mutable_constraint()->mutable_l1_ball()->set_radius(1.0);
  create.mutable_spec()->set_algorithm("ir_scg");
  create.mutable_spec()->mutable_options()->set_window_rows(10);
  ExpectRefused(client_->CreateSession(create).status(),
                "options.window_rows: not read by algorithm 'ir_scg'; name an algorithm that "
                "reads it (ir_fscg, agm_bio)");
  EXPECT_EQ(Sessions(), 0);

  // The same spec with the algorithm that reads it is created, the option
  // in effect (reported back).
  *create.mutable_spec() = SpecFor(Ridge(), "f2obo", 1);
  create.mutable_spec()->mutable_options()->set_beta_scaling("fixed");
  const absl::StatusOr<v1::SessionInfo> info = client_->CreateSession(create);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->spec().options().beta_scaling(), "fixed");
  EXPECT_EQ(Sessions(), 1);
}

TEST_F(OptionsReadE2e, AForkWithAnOptionItsAlgorithmDoesNotReadIsRefused) {
  v1::CreateSessionRequest create;
  create.set_session_id("src");
  *create.mutable_spec() = SpecFor(Ridge(), "f2obo", 1);
  ASSERT_TRUE(client_->CreateSession(create).ok());
  ASSERT_TRUE(client_->Step(RequestFor(Ridge(), "src", 1)).ok());
  v1::ForkSessionRequest fork;
  fork.set_session_id("src");
  fork.set_new_session_id("fork");
  fork.mutable_options()->set_window(5);  // the averaging window of obbo, sobow, sobbo
  ExpectRefused(client_->ForkSession(fork).status(),
                "options.window: not read by algorithm 'f2obo'");
  EXPECT_EQ(Sessions(), 1);
  fork.mutable_options()->Clear();
  fork.mutable_options()->set_inner_steps(2);
  EXPECT_TRUE(client_->ForkSession(fork).ok());
}

// A group's shared option reaches the members that read it; one no member
// reads is refused, and so is a member's own option its algorithm ignores.
TEST_F(OptionsReadE2e, AGroupsSharedOptionsReachTheMembersThatReadThem) {
  v1::CreateGroupRequest req;
  req.set_group_id("g");
  *req.mutable_spec() = SpecFor(Ridge(), "", 1);
  req.mutable_spec()->mutable_options()->set_beta_scaling("fixed");
  req.mutable_spec()->mutable_options()->set_beta(0.01);
  req.mutable_spec()->mutable_options()->set_lambda_max(100.0);  // a fixed beta needs a cap
  v1::GroupMember* a = req.add_members();
  a->set_name("a");
  a->set_algorithm("f2obo");
  v1::GroupMember* b = req.add_members();
  b->set_name("b");
  b->set_algorithm("sobow");
  {
    v1::CreateGroupRequest unread = req;
    unread.mutable_spec()->mutable_options()->set_delta(0.5);  // aobo's
    ExpectRefused(client_->CreateGroup(unread).status(),
                  "spec.options.delta: read by no member's algorithm (a: f2obo, b: sobow)");
    unread = req;
    unread.mutable_members(1)->mutable_options()->set_beta(0.5);
    ExpectRefused(client_->CreateGroup(unread).status(),
                  "members[1] (b): options.beta: not read by algorithm 'sobow'");
    EXPECT_EQ(Sessions(), 0);
  }
  const absl::StatusOr<v1::GroupInfo> group = client_->CreateGroup(req);
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->members_size(), 2);
  const v1::AlgorithmOptions& fo = group->members(0).spec().options();
  EXPECT_EQ(fo.beta_scaling(), "fixed");
  EXPECT_EQ(fo.beta(), 0.01);
  EXPECT_EQ(fo.lambda_max(), 100.0);
  const v1::AlgorithmOptions& so = group->members(1).spec().options();
  EXPECT_FALSE(so.has_beta_scaling());
  EXPECT_FALSE(so.has_beta());
  EXPECT_FALSE(so.has_lambda_max());
}

// Exports written by older servers carry every option (the ones their
// algorithm did not read too) and may be imported; one whose spec names no
// algorithm (hand-built) is its state's algorithm's, not the class
// default's.
TEST_F(OptionsReadE2e, AnImportIsItsStatesAlgorithmsAndKeepsOlderExportsWorking) {
  v1::CreateSessionRequest create;
  create.set_session_id("f");
  *create.mutable_spec() = SpecFor(Ridge(), "f2obo", 1);
  ASSERT_TRUE(client_->CreateSession(create).ok());
  for (int t = 1; t <= 3; ++t) ASSERT_TRUE(client_->Step(RequestFor(Ridge(), "f", t)).ok());
  grpc::Status status;
  const v1::SessionExport ex = testing::ExportSession(*client_, "f", &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(ex.spec().algorithm(), "f2obo");

  v1::SessionExport unnamed = ex;
  unnamed.mutable_spec()->clear_algorithm();
  status = testing::ImportSession(*client_, "unnamed", unnamed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const absl::StatusOr<v1::SessionInfo> got = client_->GetSession("unnamed");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->spec().algorithm(), "f2obo");
  EXPECT_EQ(got->next_t(), 4);

  v1::SessionExport old = ex;
  old.mutable_spec()->mutable_options()->set_window(1);  // as servers before 2026-11-23 wrote
  old.mutable_spec()->mutable_options()->set_delta(0.1);
  status = testing::ImportSession(*client_, "old", old);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const absl::StatusOr<v1::SessionInfo> imported = client_->GetSession("old");
  ASSERT_TRUE(imported.ok());
  EXPECT_FALSE(imported->spec().options().has_window());
  // Both go on from the exported step.
  EXPECT_TRUE(client_->Step(RequestFor(Ridge(), "unnamed", 4)).ok());
  EXPECT_TRUE(client_->Step(RequestFor(Ridge(), "old", 4)).ok());
}

}  // namespace
}  // namespace f2obo
