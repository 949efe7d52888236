// The store contract across sessions: groups stored and stepped all or
// nothing, deletions with everything they own, fences, and a store holding
// many sessions reloading each exactly (store_contract.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/server/store/store_contract.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::vector<std::string> Ids(const LoadedStore& loaded) {
  std::vector<std::string> out;
  for (const StoredSession& s : loaded.sessions) out.push_back(s.id);
  return out;
}

SessionRecord WholeRecord(const std::string& id, const SessionState& s) {
  return SessionRecord{id, ContractSpec(id), WholeBytes(s), s.t, {}, /*checkpoint=*/true, nullptr};
}

TEST_P(StoreContractTest, AGroupIsStoredWithItsSessionsAndDeletedWithThem) {
  ASSERT_TRUE(store_
                  ->PutGroupWithSessions("g", {WholeRecord("m1", ContractState(1, 1.0)),
                                               WholeRecord("m2", ContractState(1, 2.0))})
                  .ok());
  ASSERT_TRUE(
      store_->PutSession("other", ContractSpec("other"), WholeBytes(ContractState(1, 3.0)), 1)
          .ok());
  Reopen();
  LoadedStore loaded = Load();
  EXPECT_THAT(Ids(loaded), UnorderedElementsAre("m1", "m2", "other"));
  ASSERT_EQ(loaded.groups.size(), 1u);
  EXPECT_EQ(loaded.groups[0].id, "g");
  EXPECT_THAT(loaded.groups[0].members, ElementsAre("m1", "m2"));
  ASSERT_TRUE(store_->DeleteGroup("g", {"m1", "m2"}).ok());
  Reopen();
  loaded = Load();
  EXPECT_THAT(Ids(loaded), ElementsAre("other"));
  EXPECT_THAT(loaded.groups, IsEmpty());
  EXPECT_TRUE(absl::IsNotFound(store_->LoadCheckpoint("m1", 1).status()));
}

TEST_P(StoreContractTest, AGroupOfExistingSessionsKeepsItsMemberOrder) {
  for (const std::string id : {"c", "a", "b"}) {
    ASSERT_TRUE(
        store_->PutSession(id, ContractSpec(id), WholeBytes(ContractState(1, 1.0)), 1).ok());
  }
  ASSERT_TRUE(store_->PutGroup("g", {"c", "a", "b"}).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.groups.size(), 1u);
  EXPECT_THAT(loaded.groups[0].members, ElementsAre("c", "a", "b"));
}

TEST_P(StoreContractTest, AGroupStepIsStoredForEveryMemberOrForNone) {
  for (const std::string id : {"a", "b"}) {
    ASSERT_TRUE(
        store_->PutSession(id, ContractSpec(id), WholeBytes(ContractState(1, 1.0, 2)), 1).ok());
  }
  const auto step = [](const std::string& id, int64_t t, double seed) {
    const SessionState s = ContractState(t, seed, 2);
    return SessionStore::SessionStep{id, t, StepStateOf(s, {0, 1}, /*complete=*/true),
                                     ContractReply(id, t - 1), 0};
  };
  // One member not stored: the whole group step fails, nothing of it stays.
  std::vector<SessionStore::SessionStep> bad;
  bad.push_back(step("a", 2, 5.0));
  bad.push_back(step("ghost", 2, 5.0));
  bad.push_back(step("b", 2, 5.0));
  const absl::Status refused = store_->CommitSteps(std::move(bad), 3);
  EXPECT_FALSE(refused.ok());
  Reopen();
  LoadedStore loaded = Load();
  for (const StoredSession& s : loaded.sessions) {
    EXPECT_TRUE(s.state.BitEquals(ContractCheckpoint(ContractState(1, 1.0, 2)))) << s.id;
    EXPECT_THAT(s.replies, IsEmpty()) << s.id;
  }
  // The members alone: both stored.
  std::vector<SessionStore::SessionStep> good;
  good.push_back(step("a", 2, 5.0));
  good.push_back(step("b", 2, 6.0));
  ASSERT_TRUE(store_->CommitSteps(std::move(good), 3).ok());
  Reopen();
  loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), 2u);
  EXPECT_TRUE(Find(loaded, "a")->state.BitEquals(ContractCheckpoint(ContractState(2, 5.0, 2))));
  EXPECT_TRUE(Find(loaded, "b")->state.BitEquals(ContractCheckpoint(ContractState(2, 6.0, 2))));
  EXPECT_EQ(Find(loaded, "b")->replies.size(), 1u);
}

TEST_P(StoreContractTest, ADeletedSessionLeavesNoRecordAndItsIdCanBeReused) {
  ASSERT_TRUE(store_
                  ->PutSession("a", ContractSpec("a"), WholeBytes(ContractState(1, 1.0, 3)), 1, {},
                               /*checkpoint=*/true)
                  .ok());
  const SessionState s = ContractState(2, 1.0, 3);
  ASSERT_TRUE(
      store_->CommitStep("a", 2, StepStateOf(s, {0, 1, 2}, true), ContractReply("a", 1), 3).ok());
  ASSERT_TRUE(
      store_->PutSession("b", ContractSpec("b"), WholeBytes(ContractState(1, 2.0)), 1).ok());
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  Reopen();
  EXPECT_THAT(Ids(Load()), ElementsAre("b"));
  EXPECT_TRUE(absl::IsNotFound(store_->LoadCheckpoint("a", 1).status()));
  // A step of the deleted session finds nothing to step.
  const absl::Status gone =
      store_->CommitStep("a", 3, WholeBytes(ContractState(3, 1.0)), ContractReply("a", 2), 3);
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
  // A new session of the same id starts clean.
  const SessionState fresh = ContractState(1, 4.0);
  ASSERT_TRUE(store_->PutSession("a", ContractSpec("a"), WholeBytes(fresh), 1).ok());
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_NE(Find(loaded, "a"), nullptr);
  EXPECT_TRUE(Find(loaded, "a")->state.BitEquals(ContractCheckpoint(fresh)));
  EXPECT_THAT(Find(loaded, "a")->replies, IsEmpty());
  EXPECT_THAT(Find(loaded, "a")->checkpoints, IsEmpty());
}

TEST_P(StoreContractTest, FencesSurviveAReopenUntilLifted) {
  ASSERT_TRUE(store_->PutFence("k1", "replica-b").ok());
  ASSERT_TRUE(store_->PutFence("k2", "replica-c").ok());
  ASSERT_TRUE(store_->PutFence("k1", "replica-d").ok());  // moved again
  Reopen();
  LoadedStore loaded = Load();
  ASSERT_EQ(loaded.fences.size(), 2u);
  for (const StoredFence& f : loaded.fences) {
    EXPECT_EQ(f.target, f.key == "k1" ? "replica-d" : "replica-c") << f.key;
  }
  ASSERT_TRUE(store_->PutFence("k1", "").ok());
  Reopen();
  loaded = Load();
  ASSERT_EQ(loaded.fences.size(), 1u);
  EXPECT_EQ(loaded.fences[0].key, "k2");
}

TEST_P(StoreContractTest, ManySessionsStepInTurnAndEachReloadsExactly) {
  constexpr int kSessions = 20, kSteps = 5;
  for (int i = 0; i < kSessions; ++i) {
    const std::string id = "s" + std::to_string(i);
    ASSERT_TRUE(
        store_->PutSession(id, ContractSpec(id), WholeBytes(ContractState(1, i, 2)), 1).ok());
  }
  for (int64_t t = 1; t <= kSteps; ++t) {
    for (int i = 0; i < kSessions; ++i) {
      const std::string id = "s" + std::to_string(i);
      const SessionState s = ContractState(t + 1, i, 2);
      // Part 1 changes every step, part 0 only on the first.
      ASSERT_TRUE(
          store_
              ->CommitStep(id, t + 1,
                           StepStateOf(s, t == 1 ? std::vector<int>{0, 1} : std::vector{1}, t == 1),
                           ContractReply(id, t), 2)
              .ok());
    }
  }
  Reopen();
  const LoadedStore loaded = Load();
  ASSERT_EQ(loaded.sessions.size(), static_cast<size_t>(kSessions));
  for (int i = 0; i < kSessions; ++i) {
    const std::string id = "s" + std::to_string(i);
    const StoredSession* s = Find(loaded, id);
    ASSERT_NE(s, nullptr) << id;
    SessionState want = ContractState(kSteps + 1, i, 2);
    want.aux.Set(0, ContractState(2, i, 2).aux[0]);  // written by the first step only
    EXPECT_TRUE(s->state.BitEquals(ContractCheckpoint(want))) << id;
    ASSERT_EQ(s->replies.size(), 2u) << id;
    EXPECT_EQ(s->replies.back().SerializeAsString(), ContractReply(id, kSteps).SerializeAsString());
  }
}

}  // namespace
}  // namespace f2obo::server
