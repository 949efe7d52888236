// Large records in side files (server/store/side_files.cc), white-box: with
// a threshold of a few hundred bytes every state, part and checkpoint of
// these small sessions goes to a file of its own; they load bit-exact, each
// file is named by exactly one row (the checkpoint a create takes is a hard
// link to the state's), released files are removed once their release is
// durable, a failed write leaves none, orphans go at Open, and damage to a
// file is caught by the row's checksum.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/state.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

using ::testing::HasSubstr;

constexpr size_t kThreshold = 256;  // StateBytes(t, seed) is ~600 bytes

std::unique_ptr<SqliteSessionStore> OpenSmall(const std::string& dir,
                                              Durability durability = Durability::kSync) {
  auto store =
      SqliteSessionStore::Open(dir, durability, SqliteSessionStore::kMaxQueuedBytes, kThreshold);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

std::set<std::string> Files(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = opendir((dir + "/records").c_str());
  if (d == nullptr) return out;
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') out.insert(e->d_name);
  }
  closedir(d);
  return out;
}

// The file names the rows hold, every table.
std::multiset<std::string> Named(const std::string& dir) {
  std::multiset<std::string> out;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(DbPath(dir).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  for (const char* sql : {"SELECT file FROM sessions WHERE file IS NOT NULL",
                          "SELECT file FROM checkpoints WHERE file IS NOT NULL",
                          "SELECT file FROM state_parts WHERE file IS NOT NULL"}) {
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &q, nullptr), SQLITE_OK) << sql;
    while (sqlite3_step(q) == SQLITE_ROW) {
      out.insert(reinterpret_cast<const char*>(sqlite3_column_text(q, 0)));
    }
    sqlite3_finalize(q);
  }
  sqlite3_close(db);
  return out;
}

// Every file is named by one row and every named file exists.
void ExpectFilesMatchRows(const std::string& dir) {
  const std::multiset<std::string> named = Named(dir);
  const std::set<std::string> files = Files(dir);
  EXPECT_EQ(std::set<std::string>(named.begin(), named.end()), files);
  EXPECT_EQ(named.size(), files.size()) << "a file named by two rows";
}

TEST_F(StoreTest, LargeRecordsGoToSideFilesAndLoadBitExact) {
  std::string state;
  {
    auto store = OpenSmall(dir_);
    ASSERT_GE(StateBytes(1, 1.0).size(), kThreshold);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1.0), 1, {}, true).ok());
    // Its state and its first checkpoint (a hard link to it).
    EXPECT_EQ(Files(dir_).size(), 2u);
    ExpectFilesMatchRows(dir_);
    for (int64_t t = 1; t <= kSteps; ++t) {
      state = StateBytes(t + 1, 1.0);
      ASSERT_TRUE(store->CommitStep("a", t + 1, state, ReplyFor("a", t), kKeep, 2).ok());
    }
    // The newest state, and the newest two checkpoints: the others released
    // and removed.
    EXPECT_EQ(Files(dir_).size(), 3u);
    ExpectFilesMatchRows(dir_);
    absl::StatusOr<std::string> checkpoint = store->LoadCheckpoint("a", kSteps + 1);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    EXPECT_EQ(*checkpoint, state);
    const std::string small = StateBytes(1, 2.0, 1);
    ASSERT_LT(small.size(), kThreshold);
    ASSERT_TRUE(store->PutSession("small", SpecFor("small"), small, 1).ok());
    EXPECT_EQ(Files(dir_).size(), 3u) << "a record under the threshold is in its row";
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 2u) << ::testing::PrintToString(loaded.damaged);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), state);
  auto store = OpenSmall(dir_);
  ASSERT_TRUE(store->DeleteSession("a").ok());
  EXPECT_TRUE(Files(dir_).empty());
}

TEST_F(StoreTest, LargePartsAndRollbacksUseSideFilesToo) {
  SessionState s;
  s.t = 1;
  s.x = Vector::Constant(4, 1.0);
  s.vectors = {Vector::Constant(3, -1.0), Vector::Constant(3, 1.0)};
  s.aux = {Vector::Constant(100, 3.0), Vector::Constant(2, 4.0)};  // one large part, one small
  const auto whole = [&] {
    return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
  };
  const std::string first = whole();
  {
    auto store = OpenSmall(dir_);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), first, 1, {}, true).ok());
    s.t = 2;
    s.aux[0][7] = -1.0;
    StepState step;
    step.head = SerializeCheckpointHead(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
    step.aux_count = 2;
    step.aux_rows = {{0, EncodeAuxPart(s.aux[0])}, {1, EncodeAuxPart(s.aux[1])}};
    step.complete = true;
    ASSERT_TRUE(store->CommitStep("a", 2, step, ReplyFor("a", 1), kKeep).ok());
    ExpectFilesMatchRows(dir_);
  }
  {
    LoadedStore loaded = Reload(dir_);
    ASSERT_EQ(loaded.sessions.size(), 1u) << ::testing::PrintToString(loaded.damaged);
    EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), whole());
  }
  {
    auto store = OpenSmall(dir_);
    ASSERT_TRUE(store->RollbackSession("a", 1, first, {}).ok());
    // The state row and its checkpoint; the parts' files released.
    EXPECT_EQ(Files(dir_).size(), 2u);
    ExpectFilesMatchRows(dir_);
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u) << ::testing::PrintToString(loaded.damaged);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), first);
}

TEST_F(StoreTest, AFailedWriteLeavesNoSideFileAndOrphansGoAtOpen) {
  {
    auto store = OpenSmall(dir_);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1.0), 1).ok());
    store->FailWritesForTesting(SQLITE_IOERR);
    EXPECT_FALSE(store->PutSession("b", SpecFor("b"), StateBytes(1, 2.0), 1).ok());
    EXPECT_FALSE(store->CommitStep("a", 2, StateBytes(2, 1.0), ReplyFor("a", 1), kKeep).ok());
    store->FailWritesForTesting(SQLITE_OK);
    EXPECT_EQ(Files(dir_).size(), 1u);
    ExpectFilesMatchRows(dir_);
  }
  // What a crash between a file and its transaction leaves.
  std::ofstream(dir_ + "/records/orphan.rec") << "never committed";
  ASSERT_EQ(Files(dir_).size(), 2u);
  OpenSmall(dir_);
  EXPECT_EQ(Files(dir_).size(), 1u);
  ExpectFilesMatchRows(dir_);
}

TEST_F(StoreTest, ADamagedOrMissingSideFileFailsItsChecksumAndTheOthersLoad) {
  {
    auto store = OpenSmall(dir_);
    for (const std::string id : {"a", "b", "c"}) {
      ASSERT_TRUE(store->PutSession(id, SpecFor(id), StateBytes(1, id[0]), 1).ok());
    }
  }
  std::vector<std::string> files;
  for (const std::string id : {"a", "b"}) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open_v2(DbPath(dir_).c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(db, "SELECT file FROM sessions WHERE id = ?", -1, &q, nullptr);
    sqlite3_bind_text(q, 1, id.c_str(), -1, SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
    files.push_back(dir_ + "/records/" + reinterpret_cast<const char*>(sqlite3_column_text(q, 0)));
    sqlite3_finalize(q);
    sqlite3_close(db);
  }
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    f.put('\x5a');  // a stray write
  }
  ASSERT_EQ(std::remove(files[1].c_str()), 0);
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(loaded.sessions[0].id, "c");
  ASSERT_EQ(loaded.damaged.size(), 2u);
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'a': state checksum mismatch"));
  EXPECT_THAT(loaded.damaged[1], HasSubstr("session 'b': state side file"));
}

TEST_F(StoreTest, TheSizeCapCountsSideFiles) {
  auto store = OpenSmall(dir_);
  // States of ~40 KB each.
  ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1.0, 5000), 1).ok());
  struct stat db;
  ASSERT_EQ(stat(DbPath(dir_).c_str(), &db), 0);
  // Room for the database file and one such side file, not two.
  ASSERT_TRUE(store->LimitSize(db.st_size + 60000).ok());
  const absl::Status s = store->PutSession("b", SpecFor("b"), StateBytes(1, 2.0, 5000), 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("--max_store_bytes"));
  EXPECT_EQ(Files(dir_).size(), 1u);
  // Deleting makes room.
  ASSERT_TRUE(store->DeleteSession("a").ok());
  EXPECT_TRUE(store->PutSession("b", SpecFor("b"), StateBytes(1, 2.0, 5000), 1).ok());
}

}  // namespace
}  // namespace f2obo::server
