// The store contract for one session read on its own (LoadSession): what a
// server sharing the store reads when it is first asked for a session,
// while the store is being written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/server/store/store_contract.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;

TEST_P(StoreContractTest, LoadSessionReadsOneSessionAsLoadAllDoes) {
  // "a" in parts with steps, replies and a checkpoint; "b" beside it.
  SessionState s = ContractState(1, 4.0, 5);
  SessionRecord record{"a", ContractSpec("a"),   SerializeCheckpointHead(ContractCheckpoint(s)), 1,
                       {},  /*checkpoint=*/true, std::make_shared<const SessionState>(s)};
  ASSERT_TRUE(store_->PutSession(std::move(record)).ok());
  ASSERT_TRUE(
      store_->PutSession("b", ContractSpec("b"), WholeBytes(ContractState(3, 9.0)), 3).ok());
  for (int64_t t = 1; t <= 3; ++t) {
    s.t = t + 1;
    s.aux.Set(static_cast<size_t>(t), Vector::Constant(2, static_cast<double>(t)));
    ASSERT_TRUE(store_
                    ->CommitStep("a", t + 1, StepStateOf(s, {static_cast<int>(t)}),
                                 ContractReply("a", t), /*keep_replies=*/2)
                    .ok());
  }
  // Read while the store is open (no reopen): what was just committed.
  absl::StatusOr<StoredSession> a = store_->LoadSession("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->id, "a");
  EXPECT_EQ(a->spec.SerializeAsString(), ContractSpec("a").SerializeAsString());
  EXPECT_TRUE(a->state.BitEquals(ContractCheckpoint(s)));
  EXPECT_THAT(ReplySteps(*a), ElementsAre(2, 3));
  EXPECT_EQ(a->replies.back().SerializeAsString(), ContractReply("a", 3).SerializeAsString());
  EXPECT_THAT(a->checkpoints, ElementsAre(1));
  // The same as LoadAll's copy of it.
  const LoadedStore all = Load();
  const StoredSession* loaded = Find(all, "a");
  ASSERT_NE(loaded, nullptr);
  EXPECT_TRUE(loaded->state.BitEquals(a->state));
  EXPECT_EQ(ReplySteps(*loaded), ReplySteps(*a));
  absl::StatusOr<StoredSession> b = store_->LoadSession("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_TRUE(b->state.BitEquals(ContractCheckpoint(ContractState(3, 9.0))));
  EXPECT_TRUE(b->replies.empty());
}

TEST_P(StoreContractTest, LoadSessionOfAnIdNotStoredIsNotFound) {
  EXPECT_TRUE(absl::IsNotFound(store_->LoadSession("ghost").status()));
  ASSERT_TRUE(
      store_->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 1.0)), 1).ok());
  ASSERT_TRUE(store_->LoadSession("a").ok());
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  const absl::Status gone = store_->LoadSession("a").status();
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
}

TEST_P(StoreContractTest, StoredStepIndexFollowsStepsAndDeletion) {
  EXPECT_TRUE(absl::IsNotFound(store_->StoredStepIndex("a").status()));
  ASSERT_TRUE(
      store_->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(4, 1.0)), 4).ok());
  EXPECT_EQ(store_->StoredStepIndex("a").value_or(-1), 4);
  ASSERT_TRUE(
      store_->CommitStep("a", 5, WholeBytes(ContractState(5, 1.0)), ContractReply("a", 4), 3).ok());
  EXPECT_EQ(store_->StoredStepIndex("a").value_or(-1), 5);
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  EXPECT_TRUE(absl::IsNotFound(store_->StoredStepIndex("a").status()));
}

TEST_P(StoreContractTest, LoadSessionAfterARollbackReadsTheRolledBackState) {
  const SessionState s1 = ContractState(1, 2.0);
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(s1), 1).ok());
  ASSERT_TRUE(
      store_->CommitStep("a", 2, WholeBytes(ContractState(2, 2.0)), ContractReply("a", 1), 3).ok());
  ASSERT_TRUE(store_->RollbackSession("a", 1, WholeBytes(s1), {}).ok());
  absl::StatusOr<StoredSession> a = store_->LoadSession("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->state.BitEquals(ContractCheckpoint(s1)));
  EXPECT_TRUE(a->replies.empty());
}

TEST_P(StoreContractTest, ListSessionsGivesEveryStoredSessionsIdSpecAndStepIndex) {
  absl::StatusOr<std::vector<SessionSummary>> none = store_->ListSessions();
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  for (const char* id : {"b", "a", "c"}) {
    ASSERT_TRUE(
        store_->PutSession(id, ContractSpec(id), WholeBytes(ContractState(1, 1.0)), 1).ok());
  }
  ASSERT_TRUE(
      store_->CommitStep("a", 2, WholeBytes(ContractState(2, 1.0)), ContractReply("a", 1), 3).ok());
  ASSERT_TRUE(store_->DeleteSession("c").ok());
  absl::StatusOr<std::vector<SessionSummary>> listed = store_->ListSessions();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].id, "a");
  EXPECT_EQ((*listed)[0].t, 2);
  EXPECT_EQ((*listed)[0].spec.SerializeAsString(), ContractSpec("a").SerializeAsString());
  EXPECT_EQ((*listed)[1].id, "b");
  EXPECT_EQ((*listed)[1].t, 1);
  EXPECT_EQ((*listed)[1].spec.SerializeAsString(), ContractSpec("b").SerializeAsString());
}

}  // namespace
}  // namespace f2obo::server
