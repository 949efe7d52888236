// A store that fails answers the same documented code on every RPC that
// writes (server/store/store_errors.h): the session manager and the group
// manager over a real store whose writes are made to fail with a given
// SQLite result code.  Nothing changes while it fails, and everything
// works again once it does not.  (The real full store, through the real
// server, is in store_full_e2e_test.cc.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "server/groups.h"
#include "server/metrics_pipeline.h"
#include "server/session_manager.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/e2e_support.h"

namespace f2obo::server {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::SpecFor;

struct Fault {
  int rc;
  absl::StatusCode code;
  const char* says;
};

class StoreErrorsTest : public ::testing::TestWithParam<Fault> {
 protected:
  void SetUp() override {
    std::string templ = ::testing::TempDir() + "f2obo-store-errors-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    dir_ = templ;
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> store =
        SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    sessions_ = std::make_unique<SessionManager>(Limits{}, &pipeline_, store_.get());
    groups_ = std::make_unique<GroupManager>(sessions_.get(), store_.get());
  }
  void TearDown() override {
    groups_.reset();
    sessions_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  v1::CreateSessionRequest CreateRequest(const std::string& id) const {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_spec() = SpecFor(f_, "f2obo", 7);
    return req;
  }
  v1::CreateGroupRequest GroupRequest(const std::string& id) const {
    v1::CreateGroupRequest req;
    req.set_group_id(id);
    *req.mutable_spec() = SpecFor(f_, "f2obo", 7);
    for (const char* name : {"a", "b"}) {
      v1::GroupMember* m = req.add_members();
      m->set_name(name);
      m->set_algorithm(name == std::string("a") ? "f2obo" : "af2obo");
    }
    return req;
  }
  v1::GroupStepRequest GroupStep(const std::string& id, int64_t t) const {
    const v1::StepRequest s = RequestFor(f_, "", t);
    v1::GroupStepRequest req;
    req.set_group_id(id);
    req.set_t(t);
    *req.mutable_upper() = s.upper();
    *req.mutable_inner() = s.inner();
    return req;
  }
  void ExpectFailure(const absl::Status& s, const char* rpc) {
    SCOPED_TRACE(rpc);
    EXPECT_EQ(s.code(), GetParam().code) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().says));
  }

  const FamilyCase f_ = AllFamilyCases()[0];
  std::string dir_;
  MetricsPipeline pipeline_{1, 4, nullptr};
  std::unique_ptr<SqliteSessionStore> store_;
  std::unique_ptr<SessionManager> sessions_;
  std::unique_ptr<GroupManager> groups_;
};

TEST_P(StoreErrorsTest, EveryWritingRpcAnswersTheSameCodeAndChangesNothing) {
  ASSERT_TRUE(sessions_->Create(CreateRequest("s")).ok());
  ASSERT_TRUE(sessions_->Step(RequestFor(f_, "s", 1)).ok());
  ASSERT_TRUE(groups_->Create(GroupRequest("g")).ok());
  const absl::StatusOr<v1::SessionExport> ex = sessions_->Export("s");
  ASSERT_TRUE(ex.ok());
  v1::ImportSessionRequest import;
  import.set_session_id("imported");
  *import.mutable_session() = *ex;
  v1::ForkSessionRequest fork;
  fork.set_session_id("s");
  fork.set_new_session_id("fork");

  store_->FailWritesForTesting(GetParam().rc);
  ExpectFailure(sessions_->Create(CreateRequest("new")).status(), "CreateSession");
  ExpectFailure(sessions_->Import(import).status(), "ImportSession");
  ExpectFailure(sessions_->Step(RequestFor(f_, "s", 2)).status(), "Step");
  ExpectFailure(groups_->DeleteSession("s"), "DeleteSession");
  ExpectFailure(groups_->Create(GroupRequest("h")).status(), "CreateGroup");
  ExpectFailure(groups_->Delete("g").status(), "DeleteGroup");
  ExpectFailure(sessions_->TakeCheckpoint("s").status(), "CheckpointSession");
  ExpectFailure(groups_->RollbackSession("s", 0).status(), "RollbackSession");
  ExpectFailure(sessions_->Fork(fork).status(), "ForkSession");
  // All members or none: the step fails as a whole.
  ExpectFailure(groups_->Step(GroupStep("g", 1)).status(), "StepGroup");
  // Nothing changed, in memory or in the store.
  EXPECT_EQ(sessions_->Get("new").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sessions_->Get("imported").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(sessions_->Get("s")->next_t(), 2);
  EXPECT_EQ(sessions_->Get("s")->checkpoints_size(), 1);  // the creation's only
  EXPECT_EQ(sessions_->Get("fork").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(groups_->Get("h").status().code(), absl::StatusCode::kNotFound);
  const absl::StatusOr<v1::GroupInfo> g = groups_->Get("g");
  ASSERT_TRUE(g.ok());
  for (const v1::SessionInfo& m : g->members()) EXPECT_EQ(m.next_t(), 1);

  store_->FailWritesForTesting(SQLITE_OK);
  EXPECT_TRUE(sessions_->Create(CreateRequest("new")).ok());
  EXPECT_TRUE(sessions_->Import(import).ok());
  EXPECT_TRUE(sessions_->Step(RequestFor(f_, "s", 2)).ok());
  EXPECT_TRUE(sessions_->TakeCheckpoint("s").ok());
  EXPECT_TRUE(sessions_->Fork(fork).ok());
  EXPECT_EQ(groups_->RollbackSession("s", 0)->next_t(), 1);
  EXPECT_TRUE(groups_->Create(GroupRequest("h")).ok());
  const absl::StatusOr<v1::GroupStepReply> retried = groups_->Step(GroupStep("g", 1));
  ASSERT_TRUE(retried.ok());
  for (const v1::MemberStepResult& m : retried->members()) EXPECT_EQ(m.code(), 0) << m.message();
  EXPECT_TRUE(groups_->Delete("g").ok());
  EXPECT_TRUE(groups_->DeleteSession("s").ok());
  const absl::StatusOr<LoadedStore> stored = store_->LoadAll();
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->sessions.size(), 5u);  // new, imported, h.a, h.b, fork
}

INSTANTIATE_TEST_SUITE_P(
    Faults, StoreErrorsTest,
    ::testing::Values(
        Fault{SQLITE_FULL, absl::StatusCode::kResourceExhausted, "the store has no room"},
        Fault{SQLITE_IOERR_WRITE, absl::StatusCode::kUnavailable, "; retry"},
        Fault{SQLITE_READONLY, absl::StatusCode::kUnavailable, "could not be written"},
        Fault{SQLITE_CORRUPT, absl::StatusCode::kInternal, "a write failed for a test"}),
    [](const ::testing::TestParamInfo<Fault>& info) {
      return std::string(absl::StatusCodeToString(info.param.code)) + "_" +
             std::to_string(info.param.rc);
    });

// A record beyond SQLite's maximum length used to be bound as NULL (the
// failed bind went unnoticed) and fail as "NOT NULL constraint failed".
TEST(StoreRecordSize, ARecordBeyondTheMaximumIsResourceExhaustedNamingTheLimit) {
  std::string templ = ::testing::TempDir() + "f2obo-store-record-XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  {
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> store =
        SqliteSessionStore::Open(templ, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    (*store)->LimitRecordBytesForTesting(4096);
    EXPECT_EQ((*store)->max_record_bytes(), 4096);
    const absl::Status s =
        (*store)->PutSession("big", v1::SessionSpec(), std::string(5000, 'x'), 1);
    EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("exceeds the store's maximum record size of 4096 bytes"));
    EXPECT_TRUE((*store)->PutSession("small", v1::SessionSpec(), std::string(1000, 'x'), 1).ok());
  }
  std::filesystem::remove_all(templ);
}

}  // namespace
}  // namespace f2obo::server
