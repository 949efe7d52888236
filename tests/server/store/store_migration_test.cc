// The session store's older files: a file from before checksums (schema
// version 0) and one with byte-wise checksums (version 3) migrate in place,
// load bit-exact and keep their damaged rows damaged; a newer server's file
// is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "server/store/sqlite_session_store.h"
#include "tests/server/store/legacy_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

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
    EXPECT_EQ(UserVersion(DbPath(dir_)), SqliteSessionStore::kSchemaVersion);
    ASSERT_THAT(loaded.sessions, SizeIs(1));
    EXPECT_EQ(loaded.sessions[0].id, "old1");
    EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), good);
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
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutCheckpoint("a", 3, StateBytes(3, 1), 4).ok());
    ASSERT_TRUE((*store)->PutFence("key-1", "replica-2").ok());
  }
  testing::RewriteWithFnvSums(DbPath(dir_), 3);
  // Damaged while still a version-3 file: its FNV sum no longer matches.
  FlipByte(DbPath(dir_), "replies", "reply", "id = 'b' AND t = 5", 2);
  {
    const LoadedStore loaded = Reload(dir_);
    EXPECT_EQ(UserVersion(DbPath(dir_)), SqliteSessionStore::kSchemaVersion);
    EXPECT_THAT(CheckLoadedExactly(loaded, expected), ElementsAre("a", "c"));
    ASSERT_THAT(loaded.damaged, SizeIs(1));
    EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'b': cached reply at t=5: checksum"));
    ASSERT_THAT(loaded.groups, SizeIs(1));
    ASSERT_THAT(loaded.fences, SizeIs(1));
    EXPECT_EQ(loaded.fences[0].target, "replica-2");  // verified, not loaded as damaged
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
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
  const auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(DbPath(dir_)));
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
}

}  // namespace
}  // namespace f2obo::server
