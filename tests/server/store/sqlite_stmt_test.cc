// The store's prepared-statement cache (server/store/sqlite_stmt.h): a
// cached statement is prepared once and gives the same results as a fresh
// one with every new set of binds; a failed run leaves it usable; the same
// SQL nested, or another text at a freed string's address, gets a
// statement of its own; Clear() lets the connection close.
#include "server/store/sqlite_stmt.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdio>
#include <memory>
#include <string>

namespace f2obo::server::store_detail {
namespace {

class StmtCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(sqlite3_open(":memory:", &db_), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db_, "CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)", nullptr,
                           nullptr, nullptr),
              SQLITE_OK);
    cache_ = std::make_unique<StmtCache>(db_);
  }
  void TearDown() override {
    cache_.reset();
    EXPECT_EQ(sqlite3_close(db_), SQLITE_OK);  // nothing left unfinalized
  }
  int64_t Count() {
    Stmt c(db_, "SELECT count(*) FROM kv");
    EXPECT_EQ(c.Step(), SQLITE_ROW);
    return c.ColumnInt(0);
  }
  sqlite3* db_ = nullptr;
  std::unique_ptr<StmtCache> cache_;
};

constexpr const char* kInsert = "INSERT INTO kv (k, v) VALUES (?, ?)";
constexpr const char* kSelect = "SELECT v FROM kv WHERE k = ?";

TEST_F(StmtCacheTest, AStatementIsPreparedOnceAndRebindsEveryUse) {
  for (int k = 1; k <= 3; ++k) {
    const std::string v = "v" + std::to_string(k);
    Stmt s(*cache_, kInsert);
    ASSERT_TRUE(s.Int(1, k).Text(2, v).Run("insert").ok());
  }
  EXPECT_EQ(cache_->size(), 1u);
  EXPECT_EQ(Count(), 3);
  for (int k = 3; k >= 1; --k) {
    Stmt s(*cache_, kSelect);
    ASSERT_EQ(s.Int(1, k).Step(), SQLITE_ROW);
    EXPECT_EQ(s.Column(0), "v" + std::to_string(k));
  }
  EXPECT_EQ(cache_->size(), 2u);
}

TEST_F(StmtCacheTest, AFailedRunLeavesTheStatementUsable) {
  {
    Stmt s(*cache_, kInsert);
    ASSERT_TRUE(s.Int(1, 1).Text(2, "a").Run("insert").ok());
  }
  {
    Stmt dup(*cache_, kInsert);
    absl::Status st = dup.Int(1, 1).Text(2, "b").Run("insert");
    EXPECT_FALSE(st.ok());  // the primary key
  }
  Stmt s(*cache_, kInsert);
  EXPECT_TRUE(s.Int(1, 2).Text(2, "c").Run("insert").ok());
  EXPECT_EQ(Count(), 2);
}

TEST_F(StmtCacheTest, TheSameSqlNestedGetsAStatementOfItsOwn) {
  {
    Stmt s(*cache_, kInsert);
    ASSERT_TRUE(s.Int(1, 1).Text(2, "a").Run("insert").ok());
    Stmt t(*cache_, kInsert);  // while s is still held
    ASSERT_TRUE(t.Int(1, 2).Text(2, "b").Run("insert").ok());
  }
  EXPECT_EQ(Count(), 2);
  EXPECT_EQ(cache_->size(), 1u);
}

TEST_F(StmtCacheTest, AnotherTextAtTheSameAddressIsNotGivenTheCachedStatement) {
  char sql[64] = "SELECT 1";
  {
    Stmt s(*cache_, sql);
    ASSERT_EQ(s.Step(), SQLITE_ROW);
    EXPECT_EQ(s.ColumnInt(0), 1);
  }
  std::snprintf(sql, sizeof(sql), "SELECT 2");
  Stmt s(*cache_, sql);
  ASSERT_EQ(s.Step(), SQLITE_ROW);
  EXPECT_EQ(s.ColumnInt(0), 2);
}

TEST_F(StmtCacheTest, SqlThatDoesNotPrepareReportsItsErrorAndIsNotCached) {
  Stmt s(*cache_, "INSERT INTO no_such_table VALUES (1)");
  EXPECT_FALSE(s.ok());
  absl::Status st = s.Run("insert");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(std::string(st.message()).find("no_such_table"), std::string::npos) << st;
  EXPECT_EQ(cache_->size(), 0u);
}

}  // namespace
}  // namespace f2obo::server::store_detail
