// The store contract, one session at a time: create, steps (whole and in
// parts), the reply cache, checkpoints and rollback, each read back after a
// reopen (store_contract.h says how a kind of store runs these).
#include "tests/server/store/store_contract.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;

TEST_P(StoreContractTest, ACreatedSessionReloadsBitExact) {
  const SessionState s = ContractState(1, 2.0);
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(s), 1).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  const StoredSession& a = loaded.sessions[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.spec.SerializeAsString(), ContractSpec("a").SerializeAsString());
  EXPECT_TRUE(a.state.BitEquals(ContractCheckpoint(s)));
  EXPECT_TRUE(a.replies.empty());
  EXPECT_TRUE(a.checkpoints.empty());
}

TEST_P(StoreContractTest, AnImportedSessionKeepsItsStepIndexAndReplies) {
  const SessionState s = ContractState(8, 1.0);
  const std::vector<v1::StepReply> replies = {ContractReply("a", 6), ContractReply("a", 7)};
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(s), 8, replies).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(loaded.sessions[0].state.state.t, 8);
  EXPECT_THAT(ReplySteps(loaded.sessions[0]), ElementsAre(6, 7));
  // The reply cache goes on from there: the newest 2 are kept.
  ASSERT_TRUE(store_
                  ->CommitStep("a", 9, WholeBytes(ContractState(9, 1.0)), ContractReply("a", 8),
                               /*keep_replies=*/2)
                  .ok());
  Reopen();
  EXPECT_THAT(ReplySteps(Load().sessions.at(0)), ElementsAre(7, 8));
}

TEST_P(StoreContractTest, StepsReplaceTheStateAndKeepTheNewestReplies) {
  ASSERT_TRUE(
      store_->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 3.0)), 1).ok());
  for (int64_t t = 1; t <= 5; ++t) {
    ASSERT_TRUE(store_
                    ->CommitStep("a", t + 1, WholeBytes(ContractState(t + 1, 3.0)),
                                 ContractReply("a", t), /*keep_replies=*/3)
                    .ok());
  }
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  const StoredSession& a = loaded.sessions[0];
  EXPECT_TRUE(a.state.BitEquals(ContractCheckpoint(ContractState(6, 3.0))));
  ASSERT_THAT(ReplySteps(a), ElementsAre(3, 4, 5));
  EXPECT_EQ(a.replies.back().SerializeAsString(), ContractReply("a", 5).SerializeAsString());
}

TEST_P(StoreContractTest, StepsInPartsReloadAsTheWholeState) {
  SessionState s = ContractState(1, 2.0, 6);
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(s), 1).ok());
  // The first step after a whole put writes every part.
  s = ContractState(2, 2.0, 6);
  ASSERT_TRUE(store_
                  ->CommitStep("a", 2, StepStateOf(s, {0, 1, 2, 3, 4, 5}, /*complete=*/true),
                               ContractReply("a", 1), 3)
                  .ok());
  // Then only what changed: part 4, a new part 6, part 1 emptied.
  s.t = 3;
  s.aux.Set(4, (Vector(2) << -4.0, 4.0).finished());
  s.aux.push_back(Vector::Ones(2));
  s.aux.Set(1, Vector());
  ASSERT_TRUE(store_->CommitStep("a", 3, StepStateOf(s, {1, 4, 6}), ContractReply("a", 2), 3).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_TRUE(loaded.sessions[0].state.BitEquals(ContractCheckpoint(s)));
  // A state that shrank drops the parts beyond it.
  s.t = 4;
  while (s.aux.size() > 2) s.aux.pop_back();
  StepState shrunk = StepStateOf(s, {});
  shrunk.trim = true;
  ASSERT_TRUE(store_->CommitStep("a", 4, std::move(shrunk), ContractReply("a", 3), 3).ok());
  Reopen();
  EXPECT_TRUE(Load().sessions.at(0).state.BitEquals(ContractCheckpoint(s)));
}

TEST_P(StoreContractTest, ASessionPutInPartsReloadsBitExact) {
  const SessionState s = ContractState(1, 5.0, 9);
  SessionRecord record{"a", ContractSpec("a"),   SerializeCheckpointHead(ContractCheckpoint(s)), 1,
                       {},  /*checkpoint=*/true, std::make_shared<const SessionState>(s)};
  ASSERT_TRUE(store_->PutSession(std::move(record)).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_TRUE(loaded.sessions[0].state.BitEquals(ContractCheckpoint(s)));
  EXPECT_THAT(loaded.sessions[0].checkpoints, ElementsAre(1));
  absl::StatusOr<Checkpoint> first = store_->LoadCheckpointState("a", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->BitEquals(ContractCheckpoint(s)));
}

TEST_P(StoreContractTest, AStepOfASessionNotStoredIsNotFoundAndWritesNothing) {
  const absl::Status s = store_->CommitStep("ghost", 2, WholeBytes(ContractState(2, 1.0)),
                                            ContractReply("ghost", 1), 3);
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  Reopen();
  EXPECT_TRUE(Load().sessions.empty());
}

TEST_P(StoreContractTest, CheckpointsKeepTheNewestAndReadBackBitExact) {
  ASSERT_TRUE(store_
                  ->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 4.0)), 1, {},
                               /*checkpoint=*/true)
                  .ok());
  for (int64_t t = 1; t <= 4; ++t) {
    // A checkpoint with steps 2 and 4, keeping the newest 2.
    const int keep = t % 2 == 0 ? 2 : 0;
    ASSERT_TRUE(store_
                    ->CommitStep("a", t + 1, WholeBytes(ContractState(t + 1, 4.0)),
                                 ContractReply("a", t), 3, keep)
                    .ok());
  }
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_THAT(loaded.sessions[0].checkpoints, ElementsAre(3, 5));
  for (int64_t t : {3, 5}) {
    absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", t);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(*bytes, WholeBytes(ContractState(t, 4.0)));
  }
  EXPECT_TRUE(absl::IsNotFound(store_->LoadCheckpoint("a", 1).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->LoadCheckpoint("a", 4).status()));
}

TEST_P(StoreContractTest, ACheckpointOnDemandReplacesOneAtTheSameStep) {
  ASSERT_TRUE(
      store_->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 4.0)), 1).ok());
  ASSERT_TRUE(store_->PutCheckpoint("a", 1, WholeBytes(ContractState(1, 9.0)), 3).ok());
  ASSERT_TRUE(store_->PutCheckpoint("a", 1, WholeBytes(ContractState(1, 4.0)), 3).ok());
  Reopen();
  EXPECT_THAT(Load().sessions.at(0).checkpoints, ElementsAre(1));
  absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", 1);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, WholeBytes(ContractState(1, 4.0)));
}

// A checkpoint in parts: the head plus the parts changed since `base`.
CheckpointParts PartsOf(const SessionState& s, const std::vector<int>& changed, int64_t base) {
  CheckpointParts c;
  c.head = SerializeCheckpointHead(ContractCheckpoint(s));
  c.count = static_cast<int64_t>(s.aux.size());
  c.base = base;
  for (int i : changed) c.rows.emplace_back(i, EncodeAuxPart(s.aux[i]));
  return c;
}

TEST_P(StoreContractTest, CheckpointsInPartsExtendTheNewestAndReadBackJoined) {
  SessionState s = ContractState(1, 2.0, 5);
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(s), 1).ok());
  ASSERT_TRUE(store_->PutCheckpoint("a", 1, PartsOf(s, {0, 1, 2, 3, 4}, 0), 4).ok());
  const SessionState first = s;
  s.t = 7;
  s.aux.Set(2, Vector::Constant(4, 8.5));
  // (A checkpoint is of the session as it is: at its step index; steps
  // from t - 1 to t bring it there.)
  const auto step_to = [&](SessionState at, int64_t to) {
    for (int64_t t = at.t + 1; t <= to; ++t) {
      at.t = t;
      ASSERT_TRUE(store_->CommitStep("a", t, WholeBytes(at), ContractReply("a", t - 1), 3).ok());
    }
  };
  step_to(first, 7);
  ASSERT_TRUE(store_->PutCheckpoint("a", 7, PartsOf(s, {2}, /*base=*/1), 4).ok());
  SessionState later = s;
  later.t = 9;
  step_to(s, 9);
  // A checkpoint extending one that is not the newest is refused, nothing written.
  const absl::Status stale = store_->PutCheckpoint("a", 9, PartsOf(later, {2}, /*base=*/1), 4);
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  Reopen();
  EXPECT_THAT(Load().sessions.at(0).checkpoints, ElementsAre(1, 7));
  for (const SessionState& want : {first, s}) {
    absl::StatusOr<Checkpoint> got = store_->LoadCheckpointState("a", want.t);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->BitEquals(ContractCheckpoint(want))) << want.t;
    absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", want.t);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(*bytes, WholeBytes(want));
  }
}

TEST_P(StoreContractTest, RollbackRestoresStateAndRepliesAndDropsLaterCheckpoints) {
  ASSERT_TRUE(store_
                  ->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 6.0)), 1, {},
                               /*checkpoint=*/true)
                  .ok());
  for (int64_t t = 1; t <= 4; ++t) {
    ASSERT_TRUE(store_
                    ->CommitStep("a", t + 1, WholeBytes(ContractState(t + 1, 6.0)),
                                 ContractReply("a", t), 3, /*keep_checkpoints=*/5)
                    .ok());
  }
  // Back to next step index 3 (after step 2), with the replies up to it.
  const std::vector<v1::StepReply> replies = {ContractReply("a", 1), ContractReply("a", 2)};
  ASSERT_TRUE(
      store_->RollbackSession("a", 3, WholeBytes(ContractState(3, 6.0)), replies, /*from_t=*/5)
          .ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  const StoredSession& a = loaded.sessions[0];
  EXPECT_TRUE(a.state.BitEquals(ContractCheckpoint(ContractState(3, 6.0))));
  EXPECT_THAT(ReplySteps(a), ElementsAre(1, 2));
  EXPECT_THAT(a.checkpoints, ElementsAre(1, 2, 3));
  EXPECT_TRUE(absl::IsNotFound(store_->LoadCheckpoint("a", 4).status()));
  // Stepping on from there: a new branch of history.
  ASSERT_TRUE(
      store_->CommitStep("a", 4, WholeBytes(ContractState(4, 7.0)), ContractReply("a", 3), 3).ok());
  Reopen();
  EXPECT_THAT(ReplySteps(Load().sessions.at(0)), ElementsAre(1, 2, 3));
}

TEST_P(StoreContractTest, RollbackOfASessionNotStoredIsNotFound) {
  const absl::Status s = store_->RollbackSession("ghost", 1, WholeBytes(ContractState(1, 1.0)), {});
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
}

// A store of one server's own replaces an earlier session of the id; a
// shared one refuses (another server's session, perhaps created at the
// same moment) and keeps it whole.
TEST_P(StoreContractTest, APutOfAStoredIdReplacesItOrIsRefusedByASharedStore) {
  ASSERT_TRUE(store_
                  ->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 1.0, 4)), 1, {},
                               /*checkpoint=*/true)
                  .ok());
  const SessionState s = ContractState(2, 1.0, 4);
  StepState step = StepStateOf(s, {0, 1, 2, 3}, /*complete=*/true);
  step.full = WholeBytes(s);  // its checkpoint
  ASSERT_TRUE(
      store_->CommitStep("a", 2, std::move(step), ContractReply("a", 1), 3, /*keep_checkpoints=*/3)
          .ok());
  // A new session "a" (say, imported over it): no part, reply or checkpoint
  // of the old one survives.
  const SessionState fresh = ContractState(1, 9.0, 1);
  const absl::Status put = store_->PutSession("a", ContractSpec("aa"), WholeBytes(fresh), 1);
  if (store_->shared()) {
    EXPECT_TRUE(absl::IsAlreadyExists(put)) << put;
    Reopen();
    const LoadedStore loaded = Load();
    ASSERT_EQ(loaded.sessions.size(), 1u);
    const StoredSession& a = loaded.sessions[0];
    EXPECT_EQ(a.spec.SerializeAsString(), ContractSpec("a").SerializeAsString());
    EXPECT_TRUE(a.state.BitEquals(ContractCheckpoint(s)));
    EXPECT_THAT(ReplySteps(a), ElementsAre(1));
    EXPECT_THAT(a.checkpoints, ElementsAre(1, 2));
    return;
  }
  ASSERT_TRUE(put.ok()) << put;
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 1u);
  const StoredSession& a = loaded.sessions[0];
  EXPECT_EQ(a.spec.SerializeAsString(), ContractSpec("aa").SerializeAsString());
  EXPECT_TRUE(a.state.BitEquals(ContractCheckpoint(fresh)));
  EXPECT_TRUE(a.replies.empty());
  EXPECT_TRUE(a.checkpoints.empty());
}

TEST_P(StoreContractTest, AStoreKeepsItsDurabilityAndNeedsNoCompleteStateAtFirst) {
  EXPECT_EQ(store_->durability(), Durability::kSync);
  EXPECT_FALSE(store_->NeedsCompleteState("a"));
  EXPECT_GT(store_->max_record_bytes(), int64_t{1} << 20);
  Reopen(Durability::kNone);
  EXPECT_EQ(store_->durability(), Durability::kNone);
}

}  // namespace
}  // namespace f2obo::server
