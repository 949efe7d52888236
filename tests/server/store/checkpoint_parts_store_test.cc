// Checkpoints in parts (server/store/checkpoints.cc): a
// checkpoint writes its head and the parts changed since the previous
// one; every kept checkpoint reads back bit-exact, old parts are collected
// as checkpoints are dropped, a checkpoint that does not extend the newest
// is refused without a trace, and whole checkpoints of older stores still
// read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
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

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int kParts = 40, kWidth = 16;

// A state at next step index t with kParts aux vectors of kWidth numbers.
SessionState Initial(int64_t t) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(4, 1.0);
  s.vectors = {Vector::Constant(3, -1.0)};
  s.scalars = {0.5};
  for (int i = 0; i < kParts; ++i) s.aux.push_back(Vector::Constant(kWidth, i));
  return s;
}

Checkpoint Of(const SessionState& s) { return Checkpoint{"quadratic", "f2obo", s, {}}; }
std::string Whole(const SessionState& s) { return SerializeCheckpoint(Of(s)); }

// Step t changes parts t % kParts and (3 t) % kParts, and x.
std::vector<int64_t> Advance(SessionState& s) {
  const int64_t t = s.t;
  s.t = t + 1;
  s.x[0] = static_cast<double>(t);
  std::vector<int64_t> changed = {t % kParts, (3 * t) % kParts};
  if (changed[0] > changed[1]) std::swap(changed[0], changed[1]);
  if (changed[0] == changed[1]) changed.pop_back();
  for (int64_t i : changed) s.aux[static_cast<size_t>(i)][0] += 1.0;
  return changed;
}

StepState Step(const SessionState& s, const std::vector<int64_t>& changed, bool complete) {
  StepState out;
  out.head = SerializeCheckpointHead(Of(s));
  out.aux_count = static_cast<int64_t>(s.aux.size());
  out.complete = complete;
  for (size_t i = 0; i < s.aux.size(); ++i) {
    const bool write = complete ? s.aux[i].size() > 0
                                : std::find(changed.begin(), changed.end(), i) != changed.end();
    if (write) out.aux_rows.emplace_back(static_cast<int64_t>(i), EncodeAuxPart(s.aux[i]));
  }
  return out;
}

// The checkpoint in parts of `s`: `changed` since `base` (0: every part).
CheckpointParts Parts(const SessionState& s, const std::vector<int64_t>& changed, int64_t base) {
  CheckpointParts c;
  c.count = static_cast<int64_t>(s.aux.size());
  c.base = base;
  for (size_t i = 0; i < s.aux.size(); ++i) {
    const bool write = base == 0 ? s.aux[i].size() > 0
                                 : std::find(changed.begin(), changed.end(), i) != changed.end();
    if (write) c.rows.emplace_back(static_cast<int64_t>(i), EncodeAuxPart(s.aux[i]));
  }
  return c;
}

int64_t Count(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &q, nullptr), SQLITE_OK) << sql;
  const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return n;
}

class CheckpointPartsTest : public StoreTest {
 protected:
  void Open(Durability d = Durability::kSync,
            size_t side_file_bytes = SqliteSessionStore::kSideFileBytes) {
    store_.reset();
    auto s =
        SqliteSessionStore::Open(dir_, d, SqliteSessionStore::kMaxQueuedBytes, side_file_bytes);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
  }
  // Session "a" created at t = 1 (a whole first checkpoint), then `steps`
  // steps; every `every`-th writes a checkpoint in parts extending the
  // previous one (the first of them starts the chain), keeping `keep`.
  // Returns the state at each checkpoint's next step index.
  std::map<int64_t, std::string> Run(int steps, int every, int keep) {
    std::map<int64_t, std::string> at;
    SessionState s = Initial(1);
    EXPECT_TRUE(store_->PutSession("a", SpecFor("a"), Whole(s), 1, {}, true).ok());
    at[1] = Whole(s);
    int64_t base = 0;
    std::vector<int64_t> since;  // changed since `base`
    for (int k = 0; k < steps; ++k) {
      const std::vector<int64_t> changed = Advance(s);
      since.insert(since.end(), changed.begin(), changed.end());
      StepState st = Step(s, changed, /*complete=*/k == 0);
      const bool due = (k + 1) % every == 0;
      if (due) {
        st.checkpoint_in_parts = true;
        st.checkpoint = Parts(s, since, base);
      }
      const absl::Status w = store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1),
                                                kKeep, due ? keep : 0);
      EXPECT_TRUE(w.ok()) << w;
      if (due) {
        base = s.t;
        since.clear();
        at[s.t] = Whole(s);
      }
    }
    last_ = s;
    last_base_ = base;
    last_since_ = since;
    return at;
  }
  std::string DbPath() const { return dir_ + "/f2obo.sqlite3"; }

  std::unique_ptr<SqliteSessionStore> store_;
  SessionState last_;
  int64_t last_base_ = 0;
  std::vector<int64_t> last_since_;
};

TEST_F(CheckpointPartsTest, EveryKeptCheckpointReadsBackBitExactAfterAReopen) {
  Open();
  const std::map<int64_t, std::string> at = Run(/*steps=*/60, /*every=*/5, /*keep=*/4);
  for (int reopen = 0; reopen < 2; ++reopen) {
    absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    ASSERT_EQ(loaded->sessions.size(), 1u);
    EXPECT_THAT(loaded->sessions[0].checkpoints, ElementsAre(46, 51, 56, 61));
    for (int64_t t : loaded->sessions[0].checkpoints) {
      absl::StatusOr<std::string> bytes = store_->LoadCheckpoint("a", t);
      ASSERT_TRUE(bytes.ok()) << t << ": " << bytes.status();
      EXPECT_EQ(*bytes, at.at(t)) << t;
    }
    EXPECT_EQ(store_->LoadCheckpoint("a", 41).status().code(), absl::StatusCode::kNotFound);
    Open();
  }
}

TEST_F(CheckpointPartsTest, ACheckpointWritesWhatChangedAndDroppedOnesLeaveNoParts) {
  Open();
  Run(/*steps=*/200, /*every=*/5, /*keep=*/3);
  // The chain's first checkpoint held all 40 parts; each later one its
  // 5 steps' changes (<= 10 parts).  What is left: for each part its newest
  // row as of the oldest kept checkpoint, plus the two newer ones' changes.
  const int64_t rows = Count(DbPath(), "SELECT count(*) FROM checkpoint_parts WHERE id = 'a'");
  EXPECT_LE(rows, kParts + 2 * 10);
  EXPECT_GE(rows, kParts);
  // Every row older than the oldest kept checkpoint is the only one of its
  // index there (the invariant collection keeps).
  EXPECT_EQ(Count(DbPath(),
                  "SELECT count(*) FROM (SELECT idx FROM checkpoint_parts WHERE id = 'a' AND "
                  "t <= (SELECT min(t) FROM checkpoints WHERE id = 'a') GROUP BY idx "
                  "HAVING count(*) > 1)"),
            0);
  // A checkpoint's bytes are its changes, not the state's size.
  EXPECT_LE(Count(DbPath(),
                  "SELECT sum(length(part)) FROM checkpoint_parts WHERE id = 'a' AND t = "
                  "(SELECT max(t) FROM checkpoints WHERE id = 'a')"),
            10 * 8 * kWidth);
}

TEST_F(CheckpointPartsTest, EmptiedAndAddedPartsAndTheirCountsReadBackExactly) {
  Open();
  Run(/*steps=*/10, /*every=*/5, /*keep=*/5);  // checkpoints 1 (whole), 6, 11
  SessionState s = last_;
  s.t += 1;
  s.aux[3] = Vector();               // emptied: must not resolve to an older row
  s.aux.push_back(Vector::Ones(2));  // a part added
  StepState st = Step(s, {3, kParts}, false);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, {3, kParts}, last_base_);
  ASSERT_TRUE(store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 5).ok());
  const std::string twelve = Whole(s);
  s.t += 1;
  s.aux.resize(10);  // the state shrank
  st = Step(s, {}, false);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, {}, 12);
  ASSERT_TRUE(store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 5).ok());
  Open();
  EXPECT_EQ(*store_->LoadCheckpoint("a", 12), twelve);
  EXPECT_EQ(*store_->LoadCheckpoint("a", 13), Whole(s));
}

TEST_F(CheckpointPartsTest, ACheckpointNotExtendingTheNewestIsRefusedWithItsStep) {
  Open();
  const std::map<int64_t, std::string> at = Run(/*steps=*/10, /*every=*/5, /*keep=*/5);
  SessionState s = last_;
  const std::vector<int64_t> changed = Advance(s);
  StepState st = Step(s, changed, false);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, changed, /*base=*/6);  // the newest is 11
  const absl::Status w =
      store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 5);
  EXPECT_EQ(w.code(), absl::StatusCode::kFailedPrecondition) << w;
  EXPECT_THAT(w.message(), HasSubstr("extends the one at t = 5"));
  // Nothing of it was written: the session, its checkpoints.
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(SerializeCheckpoint(loaded->sessions[0].state), Whole(last_));
  EXPECT_THAT(loaded->sessions[0].checkpoints, ElementsAre(1, 6, 11));
  EXPECT_EQ(Count(DbPath(), "SELECT count(*) FROM checkpoint_parts WHERE t = 12"), 0);
  // On a whole checkpoint no chain rests either.
  ASSERT_TRUE(store_->PutCheckpoint("a", 11, at.at(11), 5).ok());
  s = last_;
  const std::vector<int64_t> again = Advance(s);
  st = Step(s, again, /*complete=*/true);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, again, 11);
  EXPECT_EQ(store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 5).code(),
            absl::StatusCode::kFailedPrecondition);
  // A new chain is accepted.
  st = Step(s, again, true);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, {}, 0);
  ASSERT_TRUE(store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 5).ok());
  EXPECT_EQ(*store_->LoadCheckpoint("a", 12), Whole(s));
  EXPECT_EQ(*store_->LoadCheckpoint("a", 11), at.at(11));
}

TEST_F(CheckpointPartsTest, AFailureInsideTheCheckpointsTransactionLeavesNoTrace) {
  Open();
  Run(/*steps=*/10, /*every=*/5, /*keep=*/2);
  const int64_t rows_before = Count(DbPath(), "SELECT count(*) FROM checkpoint_parts");
  SetFaultHandlerForTesting([](std::string_view point, std::string_view) {
    return point == "checkpoint_delta_written" ? absl::InternalError("injected") : absl::OkStatus();
  });
  SessionState s = last_;
  std::vector<int64_t> since = last_since_;
  const std::vector<int64_t> changed = Advance(s);
  since.insert(since.end(), changed.begin(), changed.end());
  StepState st = Step(s, changed, false);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, since, last_base_);
  const absl::Status w =
      store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 2);
  SetFaultHandlerForTesting(nullptr);
  EXPECT_FALSE(w.ok());
  EXPECT_EQ(Count(DbPath(), "SELECT count(*) FROM checkpoint_parts"), rows_before);
  Open();
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(SerializeCheckpoint(loaded->sessions[0].state), Whole(last_));
  EXPECT_THAT(loaded->sessions[0].checkpoints, ElementsAre(6, 11));
}

TEST_F(CheckpointPartsTest, RollbackDropsLaterCheckpointsWithTheirPartsAndEarlierOnesStillRead) {
  Open();
  const std::map<int64_t, std::string> at = Run(/*steps=*/30, /*every=*/5, /*keep=*/10);
  ASSERT_TRUE(store_->RollbackSession("a", 16, at.at(16), {}).ok());
  EXPECT_EQ(Count(DbPath(), "SELECT count(*) FROM checkpoint_parts WHERE t > 16"), 0);
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  ASSERT_TRUE(loaded.ok());
  EXPECT_THAT(loaded->sessions[0].checkpoints, ElementsAre(1, 6, 11, 16));
  for (int64_t t : {1, 6, 11, 16}) EXPECT_EQ(*store_->LoadCheckpoint("a", t), at.at(t)) << t;
  // Deleting the session removes every part.
  ASSERT_TRUE(store_->DeleteSession("a").ok());
  EXPECT_EQ(Count(DbPath(), "SELECT count(*) FROM checkpoint_parts"), 0);
}

TEST_F(CheckpointPartsTest, LargePartsGoToSideFilesWhichGoWithTheirRows) {
  Open(Durability::kSync, /*side_file_bytes=*/8 * kWidth);  // every part
  const std::map<int64_t, std::string> at = Run(/*steps=*/40, /*every=*/5, /*keep=*/2);
  // The files are exactly those the rows name (none left by dropped rows;
  // counted before a reopen would remove orphans).
  int64_t files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir_ + "/records")) files += f.exists();
  EXPECT_EQ(files, Count(DbPath(),
                         "SELECT (SELECT count(*) FROM checkpoint_parts WHERE file IS NOT NULL) + "
                         "(SELECT count(*) FROM state_parts WHERE file IS NOT NULL) + "
                         "(SELECT count(*) FROM checkpoints WHERE file IS NOT NULL) + "
                         "(SELECT count(*) FROM sessions WHERE file IS NOT NULL)"));
  EXPECT_GT(Count(DbPath(), "SELECT count(*) FROM checkpoint_parts WHERE file IS NOT NULL"), 0);
  Open(Durability::kSync, 8 * kWidth);
  for (int64_t t : {36, 41}) EXPECT_EQ(*store_->LoadCheckpoint("a", t), at.at(t)) << t;
}

TEST_F(CheckpointPartsTest, ADamagedPartIsDataLossNamingIt) {
  Open();
  Run(/*steps=*/10, /*every=*/5, /*keep=*/5);
  store_.reset();
  Sql(DbPath(), "UPDATE checkpoint_parts SET part = zeroblob(length(part)) WHERE t = 11");
  Open();
  const absl::StatusOr<std::string> bad = store_->LoadCheckpoint("a", 11);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
  EXPECT_THAT(bad.status().message(), HasSubstr("checkpoint of session 'a' at t = 10"));
  EXPECT_THAT(bad.status().message(), HasSubstr("part "));
  EXPECT_TRUE(store_->LoadCheckpoint("a", 6).ok());
}

// Overwrites `bytes` at `offset` of the file at `path`.
void Scribble(const std::string& path, int64_t offset, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fseek(f, static_cast<long>(offset), SEEK_SET), 0);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
}

// The first page of table `name`'s b-tree, as a file offset.
int64_t RootOffset(const std::string& db, const std::string& name) {
  const int64_t root = Count(db, "SELECT rootpage FROM sqlite_schema WHERE name = '" + name + "'");
  return (root - 1) * Count(db, "PRAGMA page_size");
}

// The check at open leaves the checkpoints' part rows out (they are most of
// a large store, and nothing reads them at start): a b-tree of them that
// does not hold together lets the store open and every session load, and
// reading any checkpoint in parts is DATA_LOSS naming the checkpoint and
// what SQLite found; a whole checkpoint still reads.
TEST_F(CheckpointPartsTest, DamagedPartRowsAreFoundWhenACheckpointIsReadNotAtOpen) {
  Open();
  const std::map<int64_t, std::string> at = Run(/*steps=*/40, /*every=*/5, /*keep=*/10);
  store_.reset();  // closing the last connection checkpoints the WAL into the file
  ASSERT_FALSE(std::filesystem::exists(DbPath() + "-wal"));
  Scribble(DbPath(), RootOffset(DbPath(), "checkpoint_parts"), std::string(16, '\xff'));
  Open();
  absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(loaded->damaged, ::testing::IsEmpty());
  ASSERT_EQ(loaded->sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded->sessions[0].state), Whole(last_));
  EXPECT_EQ(*store_->LoadCheckpoint("a", 1), at.at(1));  // whole: no part rows
  for (int64_t t : {36, 41, 36}) {                       // the verdict stays
    const absl::StatusOr<std::string> bad = store_->LoadCheckpoint("a", t);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss) << bad.status();
    EXPECT_THAT(bad.status().message(),
                HasSubstr("checkpoint of session 'a' at t = " + std::to_string(t - 1)));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr("checkpoint part rows are damaged"));
  }
}

// What the check at open still covers: every table loaded at start (here
// the state's part rows) and the free list, which hands pages to new rows
// of every table.
TEST_F(CheckpointPartsTest, DamagedStatePartRowsOrFreeListStillRefuseTheOpen) {
  Open();
  Run(/*steps=*/40, /*every=*/5, /*keep=*/10);
  store_.reset();
  const std::string copy = dir_ + "/intact";
  std::filesystem::copy_file(DbPath(), copy);
  Scribble(DbPath(), RootOffset(DbPath(), "state_parts"), std::string(16, '\xff'));
  absl::StatusOr<std::unique_ptr<SqliteSessionStore>> parts =
      SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(parts.ok());
  EXPECT_THAT(parts.status().message(), HasSubstr(DbPath() + " is damaged"));
  EXPECT_THAT(parts.status().message(), HasSubstr("refusing to start"));
  // The free list's first trunk page (file header bytes 32-35) made a page
  // in use, with one page on the list (36-39).
  std::filesystem::copy_file(copy, DbPath(), std::filesystem::copy_options::overwrite_existing);
  const int64_t root =
      Count(DbPath(), "SELECT rootpage FROM sqlite_schema WHERE name = 'state_parts'");
  const std::string header = {
      0, 0, static_cast<char>(root >> 8), static_cast<char>(root & 0xff), 0, 0, 0, 1};
  Scribble(DbPath(), 32, header);
  absl::StatusOr<std::unique_ptr<SqliteSessionStore>> free_list =
      SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(free_list.ok());
  EXPECT_THAT(free_list.status().message(), HasSubstr(DbPath() + " is damaged"));
  EXPECT_THAT(free_list.status().message(), HasSubstr("reelist"));
}

// A version-6 store (every checkpoint a whole encoding) opens as version
// 7: its checkpoints read as before, and new ones are written in parts.
TEST_F(CheckpointPartsTest, WholeCheckpointsOfAVersionSixStoreStillReadAfterTheMigration) {
  Open();
  SessionState s = Initial(1);
  ASSERT_TRUE(store_->PutSession("a", SpecFor("a"), Whole(s), 1, {}, true).ok());
  std::map<int64_t, std::string> at = {{1, Whole(s)}};
  for (int k = 0; k < 4; ++k) {
    Advance(s);
    at[s.t] = Whole(s);
    ASSERT_TRUE(store_->CommitStep("a", s.t, Whole(s), ReplyFor("a", s.t - 1), kKeep, 10).ok());
  }
  store_.reset();
  Sql(DbPath(),
      "DROP TABLE checkpoint_parts; ALTER TABLE checkpoints DROP COLUMN parts; "
      "ALTER TABLE checkpoints DROP COLUMN since; PRAGMA user_version = 6");
  Open();
  EXPECT_EQ(Count(DbPath(), "PRAGMA user_version"), SqliteSessionStore::kSchemaVersion);
  for (const auto& [t, bytes] : at) EXPECT_EQ(*store_->LoadCheckpoint("a", t), bytes) << t;
  // The next checkpoint starts a chain in parts (it cannot extend a whole one).
  const std::vector<int64_t> changed = Advance(s);
  StepState st = Step(s, changed, true);
  st.checkpoint_in_parts = true;
  st.checkpoint = Parts(s, {}, 0);
  ASSERT_TRUE(store_->CommitStep("a", s.t, std::move(st), ReplyFor("a", s.t - 1), kKeep, 10).ok());
  Open();
  EXPECT_EQ(*store_->LoadCheckpoint("a", s.t), Whole(s));
  EXPECT_EQ(*store_->LoadCheckpoint("a", 3), at.at(3));
}

}  // namespace
}  // namespace f2obo::server
