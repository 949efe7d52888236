// The session store's integrity promises, white-box: every stored blob is
// checked on load, a damaged record is reported and skipped while the
// others load bit-exact, a damaged file is refused, older files migrate,
// and one directory has one owner.
#include "server/store/session_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/state.h"
#include "tests/server/server_process.h"
#include "tests/server/store/legacy_store.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// A state whose bytes depend on (t, seed), `n` numbers long.
std::string StateBytes(int64_t t, double seed, int n = 64) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(n, seed + static_cast<double>(t));
  s.vectors = {Vector::Constant(3, -seed), Vector::Constant(3, seed)};
  s.scalars = {0.5 * static_cast<double>(t)};
  return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
}

v1::SessionSpec SpecFor(const std::string& id) {
  v1::SessionSpec spec;
  spec.set_algorithm("f2obo");
  spec.mutable_family()->set_name("quadratic");  // any bytes will do here
  spec.add_x0(static_cast<double>(id.size()));
  return spec;
}

v1::StepReply ReplyFor(const std::string& id, int64_t t) {
  v1::StepReply r;
  r.set_session_id(id);
  r.set_t(t);
  r.add_x(static_cast<double>(t) / 3.0);
  return r;
}

// What a session should load as.
struct Expected {
  std::string spec;
  std::string state;
  std::vector<std::string> replies;  // serialized, oldest first
};

constexpr int kSteps = 6, kKeep = 3;

// Three sessions, a, b and c, each created then stepped kSteps times, and
// a group of all three.
std::map<std::string, Expected> WriteThree(const std::string& dir,
                                           Durability durability = Durability::kSync) {
  std::map<std::string, Expected> expected;
  auto store = SessionStore::Open(dir, durability);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return expected;
  double seed = 1;
  for (const std::string id : {"a", "b", "c"}) {
    Expected& e = expected[id];
    e.spec = SpecFor(id).SerializeAsString();
    EXPECT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, seed), 1).ok());
    for (int64_t t = 1; t <= kSteps; ++t) {
      e.state = StateBytes(t + 1, seed);
      EXPECT_TRUE((*store)->CommitStep(id, t + 1, e.state, ReplyFor(id, t), kKeep).ok());
      if (t > kSteps - kKeep) e.replies.push_back(ReplyFor(id, t).SerializeAsString());
    }
    seed += 10;
  }
  EXPECT_TRUE((*store)->PutGroup("g", {"a", "b", "c"}).ok());
  return expected;
}

LoadedStore Reload(const std::string& dir) {
  auto store = SessionStore::Open(dir, Durability::kSync);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  auto loaded = (*store)->LoadAll();
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : LoadedStore{};
}

// Every loaded session is bit-exact what was written; returns their ids.
std::vector<std::string> CheckLoadedExactly(const LoadedStore& loaded,
                                            const std::map<std::string, Expected>& expected) {
  std::vector<std::string> ids;
  for (const StoredSession& s : loaded.sessions) {
    ids.push_back(s.id);
    const Expected& e = expected.at(s.id);
    EXPECT_EQ(s.spec.SerializeAsString(), e.spec) << s.id;
    EXPECT_EQ(s.state, e.state) << s.id;
    std::vector<std::string> replies;
    for (const v1::StepReply& r : s.replies) replies.push_back(r.SerializeAsString());
    EXPECT_EQ(replies, e.replies) << s.id;
  }
  return ids;
}

std::string DbPath(const std::string& dir) { return dir + "/f2obo.sqlite3"; }

void Sql(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Inverts the bits of byte `offset` of `column` in the row `where` selects,
// with raw SQLite (as a bad sector or a stray write would).
void FlipByte(const std::string& db_path, const std::string& table, const std::string& column,
              const std::string& where, size_t offset) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* read = nullptr;
  const std::string select = "SELECT " + column + " FROM " + table + " WHERE " + where;
  ASSERT_EQ(sqlite3_prepare_v2(db, select.c_str(), -1, &read, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(read), SQLITE_ROW) << select;
  std::string bytes(static_cast<const char*>(sqlite3_column_blob(read, 0)),
                    sqlite3_column_bytes(read, 0));
  const bool is_text = sqlite3_column_type(read, 0) == SQLITE_TEXT;
  sqlite3_finalize(read);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(~bytes[offset]);
  sqlite3_stmt* write = nullptr;
  const std::string update = "UPDATE " + table + " SET " + column + " = ? WHERE " + where;
  ASSERT_EQ(sqlite3_prepare_v2(db, update.c_str(), -1, &write, nullptr), SQLITE_OK);
  if (is_text) {
    sqlite3_bind_text(write, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_blob(write, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  ASSERT_EQ(sqlite3_step(write), SQLITE_DONE);
  ASSERT_EQ(sqlite3_changes(db), 1);
  sqlite3_finalize(write);
  sqlite3_close(db);
}

class StoreTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string dir_ = testing::MakeTempDir();
};

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
  EXPECT_THAT(loaded.damaged[0],
              HasSubstr("session 'c': cached reply at t=5: checksum mismatch"));
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
  Sql(DbPath(dir_), "UPDATE sessions SET state = (SELECT state FROM sessions WHERE id = 'a'), "
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
  EXPECT_THAT(loaded.damaged[0],
              HasSubstr("session 'a': cached reply at t=6: checksum missing"));
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
    auto store = SessionStore::Open(dir_, Durability::kSync);
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
  const auto store = SessionStore::Open(dir_, Durability::kSync);
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
  const auto store = SessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(DbPath(dir_) + " is damaged"));
}

// A store as servers before schema version 1 wrote it (no checksums).
void WriteVersionZeroFile(const std::string& dir, const std::string& good_state,
                          const std::string& corrupt_state) {
  std::filesystem::create_directories(dir);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(DbPath(dir).c_str(), &db), SQLITE_OK);
  const char* schema =
      "PRAGMA journal_mode=WAL;"
      "CREATE TABLE sessions (id TEXT PRIMARY KEY, spec BLOB NOT NULL, "
      "state BLOB NOT NULL, t INTEGER NOT NULL);"
      "CREATE TABLE replies (id TEXT NOT NULL, t INTEGER NOT NULL, "
      "reply BLOB NOT NULL, PRIMARY KEY (id, t));"
      "CREATE TABLE groups (id TEXT PRIMARY KEY, members TEXT NOT NULL);"
      "INSERT INTO groups VALUES ('old', 'old1\nold2');";
  ASSERT_EQ(sqlite3_exec(db, schema, nullptr, nullptr, nullptr), SQLITE_OK);
  const auto insert = [&](const std::string& id, const std::string& state) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO sessions VALUES (?, ?, ?, 4)", -1, &s, nullptr);
    const std::string spec = SpecFor(id).SerializeAsString();
    sqlite3_bind_text(s, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 2, spec.data(), static_cast<int>(spec.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 3, state.data(), static_cast<int>(state.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
    sqlite3_prepare_v2(db, "INSERT INTO replies VALUES (?, 3, ?)", -1, &s, nullptr);
    const std::string reply = ReplyFor(id, 3).SerializeAsString();
    sqlite3_bind_text(s, 1, id.data(), static_cast<int>(id.size()), SQLITE_TRANSIENT);
    sqlite3_bind_blob(s, 2, reply.data(), static_cast<int>(reply.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  };
  insert("old1", good_state);
  insert("old2", corrupt_state);
  sqlite3_close(db);
}

int UserVersion(const std::string& db_path) {
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr);
  const int v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int(s, 0) : -1;
  sqlite3_finalize(s);
  sqlite3_close(db);
  return v;
}

TEST_F(StoreTest, AVersionZeroFileMigratesLoadsBitExactAndIsCheckedFromThenOn) {
  const std::string good = StateBytes(4, 7);
  std::string corrupt = StateBytes(4, 8);
  corrupt[30] = static_cast<char>(~corrupt[30]);  // damaged before the migration
  WriteVersionZeroFile(dir_, good, corrupt);
  ASSERT_EQ(UserVersion(DbPath(dir_)), 0);
  {
    const LoadedStore loaded = Reload(dir_);
    EXPECT_EQ(UserVersion(DbPath(dir_)), SessionStore::kSchemaVersion);
    ASSERT_THAT(loaded.sessions, SizeIs(1));
    EXPECT_EQ(loaded.sessions[0].id, "old1");
    EXPECT_EQ(loaded.sessions[0].state, good);
    EXPECT_EQ(loaded.sessions[0].spec.SerializeAsString(), SpecFor("old1").SerializeAsString());
    ASSERT_THAT(loaded.sessions[0].replies, SizeIs(1));
    EXPECT_EQ(loaded.sessions[0].replies[0].SerializeAsString(),
              ReplyFor("old1", 3).SerializeAsString());
    // The older check (the state's own checksum) still runs.
    ASSERT_THAT(loaded.damaged, SizeIs(1));
    EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'old2': session state: checksum"));
    ASSERT_THAT(loaded.groups, SizeIs(1));
    EXPECT_THAT(loaded.groups[0].members, ElementsAre("old1", "old2"));
  }
  // Migrated rows carry checksums: damage to them is now caught as such.
  FlipByte(DbPath(dir_), "replies", "reply", "id = 'old1'", 1);
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.sessions, IsEmpty());
  EXPECT_THAT(loaded.damaged,
              ::testing::Contains(HasSubstr("session 'old1': cached reply at t=3: checksum")));
}

TEST_F(StoreTest, AVersionThreeFileIsReSummedRowByRowAndItsDamagedRowsStayDamaged) {
  const auto expected = WriteThree(dir_);
  {
    auto store = SessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutCheckpoint("a", 3, StateBytes(3, 1), 4).ok());
    ASSERT_TRUE((*store)->PutFence("key-1", "replica-2").ok());
  }
  testing::RewriteWithFnvSums(DbPath(dir_), 3);
  // Damaged while still a version-3 file: its FNV sum no longer matches.
  FlipByte(DbPath(dir_), "replies", "reply", "id = 'b' AND t = 5", 2);
  {
    const LoadedStore loaded = Reload(dir_);
    EXPECT_EQ(UserVersion(DbPath(dir_)), SessionStore::kSchemaVersion);
    EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "c"));
    ASSERT_THAT(loaded.damaged, SizeIs(1));
    EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'b': cached reply at t=5: checksum"));
    ASSERT_THAT(loaded.groups, SizeIs(1));
    ASSERT_THAT(loaded.fences, SizeIs(1));
    EXPECT_EQ(loaded.fences[0].target, "replica-2");  // verified, not loaded as damaged
    auto store = SessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    const auto checkpoint = (*store)->LoadCheckpoint("a", 3);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
    EXPECT_EQ(*checkpoint, StateBytes(3, 1));
  }
  // The new sums guard the migrated rows from then on.
  FlipByte(DbPath(dir_), "sessions", "spec", "id = 'c'", 1);
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a"));
  EXPECT_THAT(loaded.damaged, ::testing::Contains(HasSubstr("session 'c': spec checksum")));
}

TEST_F(StoreTest, AFileFromANewerServerIsRefused) {
  WriteThree(dir_);
  Sql(DbPath(dir_), "PRAGMA user_version = 99");
  const auto store = SessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(DbPath(dir_)));
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
}

TEST_F(StoreTest, ASecondOpenOfTheSameDirectoryFailsUntilTheFirstCloses) {
  auto first = SessionStore::Open(dir_, Durability::kSync);
  ASSERT_TRUE(first.ok()) << first.status();
  const auto second = SessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(dir_ + " is already in use"));
  EXPECT_THAT(second.status().message(), HasSubstr("pid " + std::to_string(getpid())));
  first->reset();
  EXPECT_TRUE(SessionStore::Open(dir_, Durability::kSync).ok());
}

TEST_F(StoreTest, TheNoneWriteBehindQueueStaysBoundedAndLosesNothingOnClose) {
  constexpr size_t kBound = 256 << 10;
  const std::string state_of_1 = StateBytes(1, 0, 8000);  // ~64 KiB each
  constexpr int kCommits = 300;
  std::vector<std::string> states;  // made up front: submitting is then a copy
  for (int64_t t = 1; t <= kCommits; ++t) states.push_back(StateBytes(t + 1, 0, 8000));
  const std::string last = states.back();
  {
    auto store = SessionStore::Open(dir_, Durability::kNone, kBound);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutSession("n", SpecFor("n"), state_of_1, 1).ok());
    // Unbounded, these non-waiting writes (~19 MiB, each a copy) would pile
    // up far beyond the bound while the writer walks pages for each.
    for (int64_t t = 1; t <= kCommits; ++t) {
      ASSERT_TRUE((*store)->CommitStep("n", t + 1, std::move(states[t - 1]), ReplyFor("n", t),
                                       kKeep).ok());
    }
    EXPECT_LE((*store)->max_queued_bytes_seen(), kBound);
    EXPECT_GT((*store)->max_queued_bytes_seen(), 0u);
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(1));
  EXPECT_EQ(loaded.sessions[0].state, last);
  EXPECT_THAT(loaded.sessions[0].replies, SizeIs(kKeep));
}

TEST_F(StoreTest, NoneBatchesWriteEachSessionsNewestStateButEveryReplyAndCheckpoint) {
  constexpr int kCommits = 40, kEvery = 5;
  {
    auto store = SessionStore::Open(dir_, Durability::kNone);
    ASSERT_TRUE(store.ok()) << store.status();
    for (const std::string id : {"p", "q"}) {
      ASSERT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, 3), 1).ok());
    }
    // Two sessions interleaved, a checkpoint every kEvery steps, and a
    // rollback of "q" in the middle (a write of another kind between steps).
    for (int64_t t = 1; t <= kCommits; ++t) {
      for (const std::string id : {"p", "q"}) {
        const double seed = id == "p" ? 3 : 4;
        ASSERT_TRUE((*store)->CommitStep(id, t + 1, StateBytes(t + 1, seed), ReplyFor(id, t),
                                         kCommits, t % kEvery == 0 ? kCommits : 0).ok());
      }
      if (t == kCommits / 2) {
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
    EXPECT_EQ(s.state, StateBytes(kCommits + 1, seed)) << s.id;
    // "q"'s cache restarts at its rollback.
    const int64_t first = s.id == "p" ? 1 : kCommits / 2 + 1;
    ASSERT_THAT(s.replies, SizeIs(kCommits - first + 1)) << s.id;
    for (const v1::StepReply& r : s.replies) {
      EXPECT_EQ(r.SerializeAsString(), ReplyFor(s.id, r.t()).SerializeAsString()) << s.id;
    }
    EXPECT_EQ(s.replies.front().t(), first) << s.id;
  }
}

TEST_F(StoreTest, AFailedWriteNobodyWaitsForIsCountedNotLostSilently) {
  auto store = SessionStore::Open(dir_, Durability::kNone);
  ASSERT_TRUE(store.ok()) << store.status();
  // Under kNone a step's write is not waited for: its failure (here, a
  // session the store does not hold) cannot reach the caller.
  EXPECT_TRUE((*store)->CommitStep("ghost", 2, StateBytes(2, 0), ReplyFor("ghost", 1), kKeep).ok());
  // Writes apply in order: once this waited one is done, so is the step.
  ASSERT_TRUE((*store)->PutGroup("g", {"ghost"}).ok());
  EXPECT_EQ((*store)->unwaited_failures(), 1);
}

// ImportGroup's write: members and group record in one transaction.
TEST_F(StoreTest, AGroupWithItsSessionsIsStoredWhole) {
  {
    auto store = SessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    std::vector<SessionRecord> members = {
        {"g.a", SpecFor("g.a"), StateBytes(4, 1), 4, {ReplyFor("g.a", 3)}, true},
        {"g.b", SpecFor("g.b"), StateBytes(4, 2), 4, {}, false}};
    ASSERT_TRUE((*store)->PutGroupWithSessions("g", members).ok());
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  ASSERT_THAT(loaded.sessions, SizeIs(2));
  EXPECT_EQ(loaded.sessions[0].id, "g.a");
  EXPECT_EQ(loaded.sessions[0].state, StateBytes(4, 1));
  ASSERT_THAT(loaded.sessions[0].replies, SizeIs(1));
  EXPECT_EQ(loaded.sessions[0].replies[0].t(), 3);
  EXPECT_THAT(loaded.sessions[0].checkpoints, ElementsAre(4));
  EXPECT_EQ(loaded.sessions[1].state, StateBytes(4, 2));
  ASSERT_THAT(loaded.groups, SizeIs(1));
  EXPECT_THAT(loaded.groups[0].members, ElementsAre("g.a", "g.b"));
}

TEST_F(StoreTest, AGroupWhoseLastMemberCannotBeStoredLeavesNoMemberBehind) {
  {
    auto store = SessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    (*store)->LimitRecordBytesForTesting(4096);
    // The first member fits; the second's state does not.
    std::vector<SessionRecord> members = {
        {"g.a", SpecFor("g.a"), StateBytes(4, 1), 4, {}, false},
        {"g.b", SpecFor("g.b"), StateBytes(4, 2, 4096), 4, {}, false}};
    const absl::Status s = (*store)->PutGroupWithSessions("g", members);
    EXPECT_FALSE(s.ok());
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.sessions, IsEmpty()) << "a member outlived its group's failed write";
  EXPECT_THAT(loaded.groups, IsEmpty());
}

}  // namespace
}  // namespace f2obo::server
