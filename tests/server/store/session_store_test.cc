// The session store's integrity promises, white-box: every stored blob is
// checked on load, a damaged record is reported and skipped while the
// others load bit-exact, a damaged file is refused, older files migrate,
// and one directory has one owner (older files: store_migration_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/state.h"
#include "server/fault_points.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/store/legacy_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST_F(StoreTest, AllSessionsAndGroupsLoadBitExactWhenNothingIsDamaged) {
  const auto expected = WriteThree(dir_);
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "b", "c"));
  ASSERT_THAT(loaded.groups, SizeIs(1));
  EXPECT_THAT(loaded.groups[0].members, ElementsAre("a", "b", "c"));
}

TEST_F(StoreTest, AFlippedByteInOneStateIsReportedAndTheOtherSessionsLoadBitExact) {
  const auto expected = WriteThree(dir_);
  FlipByte(DbPath(dir_), "sessions", "state", "id = 'b'", 40);
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'b': state checksum mismatch"));
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "c"));
}

TEST_F(StoreTest, AFlippedByteInOneCachedReplyIsReportedAndTheOtherSessionsLoadBitExact) {
  const auto expected = WriteThree(dir_);
  FlipByte(DbPath(dir_), "replies", "reply", "id = 'c' AND t = 5", 3);
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'c': cached reply at t=5: checksum mismatch"));
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "b"));
}

TEST_F(StoreTest, AFlippedByteInOneSpecIsReportedAndTheOtherSessionsLoadBitExact) {
  const auto expected = WriteThree(dir_);
  FlipByte(DbPath(dir_), "sessions", "spec", "id = 'a'", 2);
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'a': spec checksum mismatch"));
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("b", "c"));
}

TEST_F(StoreTest, AValidStateMovedToAnotherSessionIsReported) {
  // Both blobs pass the state's own checksum: only the record's catches it.
  const auto expected = WriteThree(dir_);
  Sql(DbPath(dir_),
      "UPDATE sessions SET state = (SELECT state FROM sessions WHERE id = 'a'), "
      "state_sum = (SELECT state_sum FROM sessions WHERE id = 'a') WHERE id = 'b'");
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'b': state checksum mismatch"));
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "c"));
}

TEST_F(StoreTest, AMissingChecksumIsReportedNotTrusted) {
  const auto expected = WriteThree(dir_);
  Sql(DbPath(dir_), "UPDATE replies SET reply_sum = NULL WHERE id = 'a' AND t = 6");
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'a': cached reply at t=6: checksum missing"));
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("b", "c"));
}

TEST_F(StoreTest, ADamagedGroupMemberListIsReportedAndItsSessionsStillLoad) {
  const auto expected = WriteThree(dir_);
  FlipByte(DbPath(dir_), "groups", "members", "id = 'g'", 0);
  const LoadedStore loaded = Reload(dir_);
  ASSERT_THAT(loaded.damaged, SizeIs(1));
  EXPECT_THAT(loaded.damaged[0], HasSubstr("group 'g': member list checksum mismatch"));
  EXPECT_THAT(loaded.groups, IsEmpty());
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "b", "c"));
}

TEST_F(StoreTest, AFileTruncatedToHalfIsRefusedNamingThePath) {
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    // Enough sessions to span many pages, so half the file cuts b-trees.
    for (int i = 0; i < 40; ++i) {
      const std::string id = "s" + std::to_string(i);
      ASSERT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, i, 400), 1).ok());
    }
  }  // closing the last connection checkpoints the WAL into the file
  ASSERT_FALSE(std::filesystem::exists(DbPath(dir_) + "-wal"));
  const auto size = std::filesystem::file_size(DbPath(dir_));
  ASSERT_EQ(truncate(DbPath(dir_).c_str(), static_cast<off_t>(size / 2)), 0);
  const auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(store.ok()) << "a truncated store must not load as if intact";
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr(DbPath(dir_) + " is damaged"));
  EXPECT_THAT(store.status().message(), HasSubstr("refusing to start"));
}

TEST_F(StoreTest, AFileThatIsNotADatabaseIsRefusedNamingThePath) {
  std::FILE* f = std::fopen(DbPath(dir_).c_str(), "wb");
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 4096; ++i) std::fputc(i * 7 % 251, f);
  std::fclose(f);
  const auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(DbPath(dir_) + " is damaged"));
}

TEST_F(StoreTest, ASecondOpenOfTheSameDirectoryFailsUntilTheFirstCloses) {
  auto first = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto second = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(dir_ + " is already in use"));
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(getpid())));
  first->reset();
  EXPECT_TRUE(SqliteSessionStore::Open(dir_, Durability::kSync).ok());
}

TEST_F(StoreTest, TheNoneWriteBehindQueueStaysBoundedAndLosesNothingOnClose) {
  constexpr size_t kBound = 256 << 10;
  const std::string state_of_1 = StateBytes(1, 0, 8000);  // ~64 KiB each
  constexpr int kCommits = 300;
  std::vector<std::string> states;  // made up front: submitting is then a copy
  for (int64_t t = 1; t <= kCommits; ++t) states.push_back(StateBytes(t + 1, 0, 8000));
  const std::string last = states.back();
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kNone, kBound);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutSession("n", SpecFor("n"), state_of_1, 1).ok());
    // Unbounded, these non-waiting writes (~19 MiB, each a copy) would pile
    // up far beyond the bound while the writer walks pages for each.
    for (int64_t t = 1; t <= kCommits; ++t) {
      ASSERT_TRUE(
          (*store)->CommitStep("n", t + 1, std::move(states[t - 1]), ReplyFor("n", t), kKeep).ok());
    }
    EXPECT_LE((*store)->max_queued_bytes_seen(), kBound);
    EXPECT_GT((*store)->max_queued_bytes_seen(), 0u);
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(1));
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), last);
  EXPECT_THAT(loaded.sessions[0].replies, SizeIs(kKeep));
}

TEST_F(StoreTest, NoneBatchesWriteEachSessionsNewestStateButEveryReplyAndCheckpoint) {
  constexpr int kCommits = 40, kEvery = 5;
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kNone);
    ASSERT_TRUE(store.ok()) << store.status();
    for (const std::string id : {"p", "q"}) {
      ASSERT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, 3), 1).ok());
    }
    // Two sessions interleaved, a checkpoint every kEvery steps, and a
    // rollback of "q" in the middle (a write of another kind between steps).
    // The steps before it share one batch: the writer is held until then.
    (*store)->HoldWriterForTesting(true);
    for (int64_t t = 1; t <= kCommits; ++t) {
      for (const std::string id : {"p", "q"}) {
        const double seed = id == "p" ? 3 : 4;
        ASSERT_TRUE((*store)
                        ->CommitStep(id, t + 1, StateBytes(t + 1, seed), ReplyFor(id, t), kCommits,
                                     t % kEvery == 0 ? kCommits : 0)
                        .ok());
      }
      if (t == kCommits / 2) {
        (*store)->HoldWriterForTesting(false);  // the rollback is waited for
        ASSERT_TRUE((*store)->RollbackSession("q", t + 1, StateBytes(t + 1, 4), {}).ok());
      }
    }
    for (int64_t t = kEvery + 1; t <= kCommits + 1; t += kEvery) {
      const auto checkpoint = (*store)->LoadCheckpoint("p", t);
      ASSERT_TRUE(checkpoint.ok()) << t << ": " << checkpoint.status();
      EXPECT_EQ(*checkpoint, StateBytes(t, 3)) << t;
    }
    // Consecutive steps shared batches: some states were never written.
    EXPECT_GT((*store)->superseded_states(), 0);
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(2));
  for (const StoredSession& s : loaded.sessions) {
    const double seed = s.id == "p" ? 3 : 4;
    EXPECT_EQ(SerializeCheckpoint(s.state), StateBytes(kCommits + 1, seed)) << s.id;
    // "q"'s cache restarts at its rollback.
    const int64_t first = s.id == "p" ? 1 : kCommits / 2 + 1;
    ASSERT_THAT(s.replies, SizeIs(kCommits - first + 1)) << s.id;
    for (const v1::StepReply& r : s.replies) {
      EXPECT_EQ(r.SerializeAsString(), ReplyFor(s.id, r.t()).SerializeAsString()) << s.id;
    }
    EXPECT_EQ(s.replies.front().t(), first) << s.id;
  }
}

TEST_F(StoreTest, NoneBatchesSkipRepliesTheBatchTrimsAndKeepTheNewest) {
  // More steps than the cache keeps, gathered into shared transactions: the
  // replies the batch's last step trims are not written, and the cache
  // ends as if every reply had been: exactly the newest kKeep.
  constexpr int kCommits = 60;
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kNone);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutSession("p", SpecFor("p"), StateBytes(1, 3), 1).ok());
    // Held, the writer takes all the steps as one batch when released; a
    // write waited for comes after them in its queue.
    (*store)->HoldWriterForTesting(true);
    for (int64_t t = 1; t <= kCommits; ++t) {
      ASSERT_TRUE(
          (*store)->CommitStep("p", t + 1, StateBytes(t + 1, 3), ReplyFor("p", t), kKeep).ok());
    }
    (*store)->HoldWriterForTesting(false);
    ASSERT_TRUE((*store)->PutSession("z", SpecFor("z"), StateBytes(1, 1), 1).ok());
    EXPECT_GT((*store)->superseded_replies(), 0);
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(2));
  ASSERT_EQ(loaded.sessions[0].id, "p");  // (sorted by id: then "z")
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), StateBytes(kCommits + 1, 3));
  ASSERT_THAT(loaded.sessions[0].replies, SizeIs(kKeep));
  for (int i = 0; i < kKeep; ++i) {
    const int64_t t = kCommits - kKeep + 1 + i;
    EXPECT_EQ(loaded.sessions[0].replies[i].SerializeAsString(),
              ReplyFor("p", t).SerializeAsString())
        << t;
  }
}

TEST_F(StoreTest, AFailedWriteNobodyWaitsForIsCountedNotLostSilently) {
  auto store = SqliteSessionStore::Open(dir_, Durability::kNone);
  ASSERT_TRUE(store.ok()) << store.status();
  // Under kNone a step's write is not waited for: its failure (here, a
  // session the store does not hold) cannot reach the caller.
  EXPECT_TRUE((*store)->CommitStep("ghost", 2, StateBytes(2, 0), ReplyFor("ghost", 1), kKeep).ok());
  // Writes apply in order: once this waited one is done, so is the step.
  ASSERT_TRUE((*store)->PutGroup("g", {"ghost"}).ok());
  EXPECT_EQ((*store)->unwaited_failures(), 1);
}

// A step write whose caller's deadline passes while it
// still waits in the queue (the writer busy with an earlier batch, held
// here at its fault point) is withdrawn and never applied; the write the
// writer had already taken completes.
TEST_F(StoreTest, AStepWhoseDeadlinePassesInTheQueueIsWithdrawnNotApplied) {
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    for (const char* id : {"a", "b"}) {
      ASSERT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, 0), 1).ok());
    }
    std::promise<void> taken, release;
    std::shared_future<void> released = release.get_future().share();
    bool first = true;
    // The writer, at the fault point where it has taken a's batch.
    SetFaultHandlerForTesting([&](std::string_view point, std::string_view id) {
      if (point == "store_write" && id == "a" && first) {
        first = false;
        taken.set_value();
        released.wait();
      }
      return absl::OkStatus();
    });
    std::thread a([&] {
      EXPECT_TRUE((*store)->CommitStep("a", 2, StateBytes(2, 1), ReplyFor("a", 1), kKeep).ok());
    });
    taken.get_future().wait();  // the writer holds a's batch
    const absl::Status b =
        (*store)->CommitStep("b", 2, StateBytes(2, 2), ReplyFor("b", 1), kKeep, 0,
                             std::chrono::system_clock::now() + std::chrono::milliseconds(50));
    EXPECT_EQ(b.code(), absl::StatusCode::kDeadlineExceeded) << b;
    release.set_value();
    a.join();
    SetFaultHandlerForTesting({});  // its callback refers to this test
  }
  auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<LoadedStore> loaded = (*store)->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  std::map<std::string, size_t> replies;
  for (const StoredSession& s : loaded->sessions) replies[s.id] = s.replies.size();
  EXPECT_EQ(replies["a"], 1u);  // applied
  EXPECT_EQ(replies["b"], 0u);  // withdrawn
}

// ImportGroup's write: members and group record in one transaction.
TEST_F(StoreTest, AGroupWithItsSessionsIsStoredWhole) {
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<SessionRecord> members = {
        {"g.a", SpecFor("g.a"), StateBytes(4, 1), 4, {ReplyFor("g.a", 3)}, true, nullptr},
        {"g.b", SpecFor("g.b"), StateBytes(4, 2), 4, {}, false, nullptr}};
    ASSERT_TRUE((*store)->PutGroupWithSessions("g", members).ok());
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(2));
  EXPECT_EQ(loaded.sessions[0].id, "g.a");
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), StateBytes(4, 1));
  ASSERT_THAT(loaded.sessions[0].replies, SizeIs(1));
  EXPECT_EQ(loaded.sessions[0].replies[0].t(), 3);
  EXPECT_THAT(loaded.sessions[0].checkpoints, ElementsAre(4));
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[1].state), StateBytes(4, 2));
  ASSERT_THAT(loaded.groups, SizeIs(1));
  EXPECT_THAT(loaded.groups[0].members, ElementsAre("g.a", "g.b"));
}

TEST_F(StoreTest, AGroupWhoseLastMemberCannotBeStoredLeavesNoMemberBehind) {
  {
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    (*store)->LimitRecordBytesForTesting(4096);
    // The first member fits; the second's state does not.
    std::vector<SessionRecord> members = {
        {"g.a", SpecFor("g.a"), StateBytes(4, 1), 4, {}, false, nullptr},
        {"g.b", SpecFor("g.b"), StateBytes(4, 2, 4096), 4, {}, false, nullptr}};
    const absl::Status s = (*store)->PutGroupWithSessions("g", members);
    EXPECT_FALSE(s.ok());
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.sessions, IsEmpty()) << "a member outlived its group's failed write";
  EXPECT_THAT(loaded.groups, IsEmpty());
}

}  // namespace
}  // namespace f2obo::server
