// A new session's record in parts (SessionRecord::parts):
// create, import and fork write the head and one row per non-empty aux
// part, read where they are (no whole encoding), with the first checkpoint
// in parts starting a chain.  It reads back bit-exact, a later step writes
// only the parts it changed and a later checkpoint extends the first; a
// large part goes to a side file (its checkpoint's: a hard link); a
// failure inside the write's transaction leaves nothing, no side file
// either.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/state.h"
#include "server/fault_points.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

constexpr int kParts = 30, kWidth = 8;
constexpr int kEmptyPart = 7;  // left empty: no row

SessionState Initial(int64_t t) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(4, 2.0);
  s.vectors = {Vector::Constant(3, -1.5)};
  s.scalars = {0.25};
  for (int i = 0; i < kParts; ++i) s.aux.push_back(Vector::Constant(kWidth, 0.5 * i));
  s.aux.Set(kEmptyPart, Vector());
  return s;
}

Checkpoint Of(const SessionState& s) { return Checkpoint{"quadratic", "f2obo", s, {}}; }

SessionRecord Record(const std::string& id, const SessionState& s, bool checkpoint) {
  return SessionRecord{id, SpecFor(id), SerializeCheckpointHead(Of(s)),         s.t,
                       {}, checkpoint,  std::make_shared<const SessionState>(s)};
}

int64_t Count(const std::string& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(DbPath(dir).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sql;
  const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return n;
}

int FilesIn(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

class SessionPartsPutTest : public StoreTest {
 protected:
  void Open(size_t side_file_bytes = SqliteSessionStore::kSideFileBytes) {
    store_.reset();
    auto s = SqliteSessionStore::Open(dir_, Durability::kSync, SqliteSessionStore::kMaxQueuedBytes,
                                      side_file_bytes);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }
  void ExpectLoads(const SessionState& s) {
    absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_EQ(loaded->sessions.size(), 1u) << ::testing::PrintToString(loaded->damaged);
    EXPECT_TRUE(loaded->sessions[0].state.BitEquals(Of(s)));
  }
  std::unique_ptr<SqliteSessionStore> store_;
};

TEST_F(SessionPartsPutTest, ReadsBackBitExactAndStepsAndCheckpointsExtendIt) {
  Open();
  SessionState s = Initial(1);
  ASSERT_TRUE(store_->PutSession(Record("a", s, /*checkpoint=*/true)).ok());
  // One row per non-empty part, in the state and in its first checkpoint
  // (a chain's start), and the row's head names the count.
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM state_parts WHERE id = 'a'"), kParts - 1);
  EXPECT_EQ(Count(dir_, "SELECT parts FROM sessions WHERE id = 'a'"), kParts);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoint_parts WHERE id = 'a' AND t = 1"),
            kParts - 1);
  EXPECT_EQ(Count(dir_, "SELECT since FROM checkpoints WHERE id = 'a' AND t = 1"), 1);
  Open();
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
  absl::StatusOr<Checkpoint> first = store_->LoadCheckpointState("a", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->BitEquals(Of(s)));
  const absl::StatusOr<std::string> whole = store_->LoadCheckpoint("a", 1);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, SerializeCheckpoint(Of(s)));

  // A step writes only part 3 (the row holds the rest) with a checkpoint
  // extending the first: accepted (the first is in parts).
  const SessionState before = s;
  s.t = 2;
  s.x[0] = 9.0;
  s.aux[3][0] = -4.0;
  StepState step;
  step.head = SerializeCheckpointHead(Of(s));
  step.aux_count = kParts;
  step.trim = false;
  step.aux_rows.emplace_back(3, EncodeAuxPart(s.aux[3]));
  step.checkpoint_in_parts = true;
  step.checkpoint.count = kParts;
  step.checkpoint.base = 1;
  step.checkpoint.rows.emplace_back(3, EncodeAuxPart(s.aux[3]));
  ASSERT_TRUE(store_->CommitStep("a", 2, std::move(step), ReplyFor("a", 1), 4, 10).ok());
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoint_parts WHERE id = 'a' AND t = 2"), 1);
  Open();
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
  absl::StatusOr<Checkpoint> second = store_->LoadCheckpointState("a", 2);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->BitEquals(Of(s)));
  first = store_->LoadCheckpointState("a", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->BitEquals(Of(before)));
  EXPECT_EQ(store_->LoadCheckpointState("a", 5).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SessionPartsPutTest, ALargePartGoesToASideFileItsCheckpointsALink) {
  Open(/*side_file_bytes=*/1024);
  SessionState s = Initial(3);
  s.aux.Set(12, Vector::Constant(200, 3.25));  // 1,600 bytes
  ASSERT_TRUE(store_->PutSession(Record("a", s, /*checkpoint=*/true)).ok());
  EXPECT_EQ(FilesIn(dir_ + "/records"), 2);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM state_parts WHERE file IS NOT NULL"), 1);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoint_parts WHERE file IS NOT NULL"), 1);
  Open(1024);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
  absl::StatusOr<Checkpoint> first = store_->LoadCheckpointState("a", 3);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->BitEquals(Of(s)));
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  EXPECT_EQ(FilesIn(dir_ + "/records"), 0);
}

// Every part at or over the threshold (here all, threshold 0) to a file of
// its own, an empty part to none (it has no row): the files pair with the
// rows in index order past the empty part too.
TEST_F(SessionPartsPutTest, EveryNonEmptyPartToAFileWhenAllAreLarge) {
  Open(/*side_file_bytes=*/0);
  const SessionState s = Initial(2);
  ASSERT_TRUE(store_->PutSession(Record("a", s, /*checkpoint=*/true)).ok());
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM state_parts WHERE file IS NOT NULL"), kParts - 1);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoint_parts WHERE file IS NOT NULL"),
            kParts - 1);
  Open(0);
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
  absl::StatusOr<Checkpoint> first = store_->LoadCheckpointState("a", 2);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->BitEquals(Of(s)));
}

TEST_F(SessionPartsPutTest, AFailureInsideItsTransactionLeavesNothing) {
  Open(/*side_file_bytes=*/1024);
  SessionState s = Initial(1);
  s.aux.Set(2, Vector::Constant(300, 1.0));  // a side file and its link
  SetFaultHandlerForTesting([](std::string_view point, std::string_view) {
    return point == "put_parts_written" ? absl::InternalError("injected") : absl::OkStatus();
  });
  const absl::Status failed = store_->PutSession(Record("a", s, /*checkpoint=*/true));
  SetFaultHandlerForTesting(nullptr);
  EXPECT_FALSE(failed.ok());
  for (const char* table : {"sessions", "state_parts", "checkpoints", "checkpoint_parts"}) {
    EXPECT_EQ(Count(dir_, std::string("SELECT count(*) FROM ") + table), 0) << table;
  }
  EXPECT_EQ(FilesIn(dir_ + "/records"), 0);
  Open(1024);
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_TRUE(loaded->sessions.empty());
  ASSERT_TRUE(store_->PutSession(Record("a", s, /*checkpoint=*/true)).ok());
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
}

TEST_F(SessionPartsPutTest, ReplacesAnEarlierSessionsPartsAndCheckpoints) {
  // An id reused (delete then import, or a retried create whose first
  // write committed): nothing of the earlier session survives.
  Open();
  SessionState old = Initial(1);
  for (int i = 0; i < 5; ++i) old.aux.push_back(Vector::Constant(kWidth, 100.0 + i));
  ASSERT_TRUE(store_->PutSession(Record("a", old, true)).ok());
  const SessionState s = Initial(4);
  ASSERT_TRUE(store_->PutSession(Record("a", s, true)).ok());
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM state_parts WHERE id = 'a'"), kParts - 1);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoints WHERE id = 'a'"), 1);
  EXPECT_EQ(Count(dir_, "SELECT count(*) FROM checkpoint_parts WHERE id = 'a'"), kParts - 1);
  Open();
  ASSERT_NO_FATAL_FAILURE(ExpectLoads(s));
}

}  // namespace
}  // namespace f2obo::server
