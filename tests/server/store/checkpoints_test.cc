// The store's checkpoints, white-box: written with the step (or creation)
// whose state they keep, bounded to the newest, listed on load and read
// back bit-exact, verified by checksum, cut back by a rollback, removed
// with their session, and migrated into older files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/state.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/server_process.h"
#include "tests/server/store/legacy_store.h"
#include "tests/server/store/store_fixture.h"  // Sql

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A state at next step index t whose bytes depend on t.
std::string StateAt(int64_t t) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(8, 0.25 * static_cast<double>(t));
  s.vectors = {Vector::Constant(3, -static_cast<double>(t)), Vector::Constant(3, 1.0)};
  s.scalars = {0.5};
  return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
}

v1::SessionSpec Spec() {
  v1::SessionSpec spec;
  spec.set_algorithm("f2obo");
  spec.mutable_family()->set_name("quadratic");
  return spec;
}

v1::StepReply ReplyOf(const std::string& id, int64_t t) {
  v1::StepReply r;
  r.set_session_id(id);
  r.set_t(t);
  r.add_x(static_cast<double>(t));
  return r;
}

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void TearDown() override {
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void Open(Durability d = Durability::kSync) {
    store_.reset();
    auto s = SqliteSessionStore::Open(dir_, d);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }
  // Session `id` created at t = 1 (its first checkpoint), then steps
  // 1..steps, a checkpoint with every even step, keeping `keep`.
  void Write(const std::string& id, int steps, int keep) {
    ASSERT_TRUE(store_->PutSession(id, Spec(), StateAt(1), 1, {}, /*checkpoint=*/true).ok());
    for (int64_t t = 1; t <= steps; ++t) {
      ASSERT_TRUE(store_
                      ->CommitStep(id, t + 1, StateAt(t + 1), ReplyOf(id, t), /*keep=*/4,
                                   t % 2 == 0 ? keep : 0)
                      .ok());
    }
  }
  const StoredSession* Loaded(const LoadedStore& loaded, const std::string& id) {
    for (const StoredSession& s : loaded.sessions) {
      if (s.id == id) return &s;
    }
    return nullptr;
  }
  LoadedStore Reload() {
    Open();
    absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : LoadedStore{};
  }
  std::string DbPath() const { return dir_ + "/f2obo.sqlite3"; }

  const std::string dir_ = testing::MakeTempDir();
  std::unique_ptr<SqliteSessionStore> store_;
};

TEST_F(CheckpointStoreTest, StepsKeepTheNewestCheckpointsWhichLoadBitExactAfterAReopen) {
  Write("a", 10, /*keep=*/3);
  const LoadedStore loaded = Reload();
  const StoredSession* a = Loaded(loaded, "a");
  ASSERT_NE(a, nullptr);
  // Even steps 6, 8, 10 leave states at next index 7, 9, 11; the creation's
  // (index 1) and steps 2, 4 were dropped as older.
  EXPECT_THAT(a->checkpoints, ElementsAre(7, 9, 11));
  for (int64_t t : a->checkpoints) {
    absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", t);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    EXPECT_EQ(*bytes, StateAt(t));
  }
  const absl::StatusOr<std::string> gone = store_->LoadCheckpoint("a", 1);
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound) << gone.status();
}

TEST_F(CheckpointStoreTest, ACheckpointOnDemandReplacesOneAtTheSameIndexAndCountsTowardTheBound) {
  Write("a", 4, /*keep=*/3);  // checkpoints 1, 3, 5
  ASSERT_TRUE(store_->PutCheckpoint("a", 5, StateAt(5), 3).ok());
  ASSERT_TRUE(store_->PutCheckpoint("a", 6, StateAt(6), 3).ok());
  const LoadedStore loaded = Reload();
  ASSERT_NE(Loaded(loaded, "a"), nullptr);
  EXPECT_THAT(Loaded(loaded, "a")->checkpoints, ElementsAre(3, 5, 6));
}

TEST_F(CheckpointStoreTest, RollbackRestoresTheStateCutsRepliesAndLaterCheckpointsAtomically) {
  Write("a", 8, /*keep=*/10);  // checkpoints 1, 3, 5, 7, 9; replies 5..8
  // Back to the state before step 5 (next index 5): replies of steps <= 4.
  ASSERT_TRUE(store_->RollbackSession("a", 5, StateAt(5), {ReplyOf("a", 4)}).ok());
  {
    const LoadedStore loaded = Reload();
    const StoredSession* a = Loaded(loaded, "a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(SerializeCheckpoint(a->state), StateAt(5));
    ASSERT_THAT(a->replies, SizeIs(1));
    EXPECT_EQ(a->replies[0].t(), 4);
    EXPECT_THAT(a->checkpoints, ElementsAre(1, 3, 5));
  }
  // Steps continue from there; the cache keeps its newest four in order.
  for (int64_t t = 5; t <= 7; ++t) {
    ASSERT_TRUE(store_->CommitStep("a", t + 1, StateAt(t + 1), ReplyOf("a", t), 4).ok());
  }
  const LoadedStore loaded = Reload();
  const StoredSession* a = Loaded(loaded, "a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(SerializeCheckpoint(a->state), StateAt(8));
  std::vector<int64_t> replied;
  for (const v1::StepReply& r : a->replies) replied.push_back(r.t());
  EXPECT_THAT(replied, ElementsAre(4, 5, 6, 7));
}

TEST_F(CheckpointStoreTest, RollbackOfAnUnknownSessionIsNotFoundAndWritesNothing) {
  const absl::Status s = store_->RollbackSession("ghost", 3, StateAt(3), {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(Reload().sessions, IsEmpty());
}

TEST_F(CheckpointStoreTest, DeletingASessionRemovesItsCheckpointsAndANewOneOfTheIdStartsClean) {
  Write("a", 6, /*keep=*/5);
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  EXPECT_EQ(store_->LoadCheckpoint("a", 3).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(store_->PutSession("a", Spec(), StateAt(2), 2, {}, /*checkpoint=*/true).ok());
  const LoadedStore loaded = Reload();
  ASSERT_NE(Loaded(loaded, "a"), nullptr);
  EXPECT_THAT(Loaded(loaded, "a")->checkpoints, ElementsAre(2));
}

TEST_F(CheckpointStoreTest, ADamagedCheckpointIsDataLossNamingItAndTheOthersStillRead) {
  Write("a", 4, /*keep=*/5);  // checkpoints 1, 3, 5
  store_.reset();
  Sql(DbPath(), "UPDATE checkpoints SET state = zeroblob(length(state)) WHERE id = 'a' AND t = 3");
  const LoadedStore loaded = Reload();
  ASSERT_NE(Loaded(loaded, "a"), nullptr);  // the session itself is intact
  EXPECT_THAT(loaded.damaged, IsEmpty());
  const absl::StatusOr<std::string> bad = store_->LoadCheckpoint("a", 3);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("checkpoint of session 'a' at t = 2"));
  // A valid checkpoint moved to another index fails its checksum too.
  Sql(DbPath(), "UPDATE checkpoints SET t = 4 WHERE id = 'a' AND t = 5");
  EXPECT_EQ(store_->LoadCheckpoint("a", 4).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(*store_->LoadCheckpoint("a", 1), StateAt(1));
}

TEST_F(CheckpointStoreTest, UnderNoDurabilityAReadSeesTheCheckpointOfAStepNotWaitedFor) {
  Open(Durability::kNone);
  ASSERT_TRUE(store_->PutSession("a", Spec(), StateAt(1), 1, {}, true).ok());
  for (int64_t t = 1; t <= 50; ++t) {
    ASSERT_TRUE(store_->CommitStep("a", t + 1, StateAt(t + 1), ReplyOf("a", t), 4, 100).ok());
  }
  // Queued behind the 50 steps, the read sees all of them.
  for (int64_t t : {2, 26, 51}) {
    absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", t);
    ASSERT_TRUE(bytes.ok()) << t << ": " << bytes.status();
    EXPECT_EQ(*bytes, StateAt(t));
  }
}

TEST_F(CheckpointStoreTest, AVersionOneFileGainsTheCheckpointsTableAndItsSessionsLoad) {
  ASSERT_TRUE(store_->PutSession("old", Spec(), StateAt(3), 3).ok());
  store_.reset();
  testing::RewriteWithFnvSums(DbPath(), 1, "DROP TABLE checkpoints; DROP TABLE fences");
  const LoadedStore loaded = Reload();
  ASSERT_NE(Loaded(loaded, "old"), nullptr);
  EXPECT_EQ(SerializeCheckpoint(Loaded(loaded, "old")->state), StateAt(3));
  EXPECT_THAT(Loaded(loaded, "old")->checkpoints, IsEmpty());
  ASSERT_TRUE(store_->PutCheckpoint("old", 3, StateAt(3), 2).ok());
  EXPECT_EQ(*store_->LoadCheckpoint("old", 3), StateAt(3));
}

}  // namespace
}  // namespace f2obo::server
