// The store's fence table (server/store/fences.cc), white-box: a fence is
// set, replaced, lifted and listed; it survives a reopen (it is durable
// before PutFence returns); and a damaged fence record is reported
// precisely and still fences its key (target unknown) rather than
// crashing the load or leaving the key's sessions free to step.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "server/session_manager.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/server_process.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

std::vector<std::pair<std::string, std::string>> FencesOf(const LoadedStore& loaded) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const StoredFence& f : loaded.fences) out.emplace_back(f.key, f.target);
  return out;
}

void Sql(const std::string& dir, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/f2obo.sqlite3").c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

class FenceStoreTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::unique_ptr<SqliteSessionStore> Open() {
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> store =
        SqliteSessionStore::Open(dir_, Durability::kSync);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  // Fences "alpha" -> r1 and "beta" -> r2, then closes the store.
  void WriteTwo() {
    std::unique_ptr<SqliteSessionStore> store = Open();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutFence("alpha", "r1").ok());
    ASSERT_TRUE(store->PutFence("beta", "r2").ok());
  }
  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(FenceStoreTest, SetReplaceAndLiftAreListedByLoadAll) {
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutFence("alpha", "r1").ok());
  ASSERT_TRUE(store->PutFence("beta", "r2").ok());
  absl::StatusOr<LoadedStore> loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alpha", "r1"), Pair("beta", "r2")));
  // Fencing again replaces the target (a move redirected), one row per key.
  ASSERT_TRUE(store->PutFence("alpha", "r3").ok());
  // An empty target lifts; lifting a key with no fence is no error.
  ASSERT_TRUE(store->PutFence("beta", "").ok());
  ASSERT_TRUE(store->PutFence("gamma", "").ok());
  loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alpha", "r3")));
  EXPECT_THAT(loaded->damaged, IsEmpty());
}

TEST_F(FenceStoreTest, FencesAndLiftsSurviveAReopen) {
  WriteTwo();
  {
    std::unique_ptr<SqliteSessionStore> store = Open();
    ASSERT_NE(store, nullptr);
    absl::StatusOr<LoadedStore> loaded = store->LoadAll();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alpha", "r1"), Pair("beta", "r2")));
    ASSERT_TRUE(store->PutFence("alpha", "").ok());
  }
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<LoadedStore> loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("beta", "r2")));
  EXPECT_THAT(loaded->damaged, IsEmpty());
}

TEST_F(FenceStoreTest, ADamagedTargetIsReportedAndTheKeyStaysFencedWithAnUnknownTarget) {
  WriteTwo();
  // One byte of the target changed behind the store's back ('r1' -> 'r7').
  Sql(dir_, "UPDATE fences SET target = 'r7' WHERE key = 'alpha'");
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<LoadedStore> loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  // Not lifted, not trusted: still a fence, with no target to send clients to.
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alpha", ""), Pair("beta", "r2")));
  ASSERT_THAT(loaded->damaged, SizeIs(1));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("fence of key 'alpha': checksum mismatch"));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("kept as a fence with an unknown target"));
}

TEST_F(FenceStoreTest, AMissingChecksumIsReportedNotTrusted) {
  WriteTwo();
  Sql(dir_, "UPDATE fences SET target_sum = NULL WHERE key = 'beta'");
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<LoadedStore> loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alpha", "r1"), Pair("beta", "")));
  ASSERT_THAT(loaded->damaged, SizeIs(1));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("fence of key 'beta'"));
}

TEST_F(FenceStoreTest, ADamagedKeyIsReportedWithTheWarningThatTheRealKeyMayBeUnfenced) {
  WriteTwo();
  // The key itself garbled: the row no longer names the key it fenced, so
  // the report must say so instead of passing for a harmless target loss.
  Sql(dir_, "UPDATE fences SET key = 'alphb' WHERE key = 'alpha'");
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<LoadedStore> loaded = store->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_THAT(FencesOf(*loaded), ElementsAre(Pair("alphb", ""), Pair("beta", "r2")));
  ASSERT_THAT(loaded->damaged, SizeIs(1));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("fence of key 'alphb'"));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("the key or the target"));
  EXPECT_THAT(loaded->damaged[0], HasSubstr("f2obo-cli rebalance"));
}

TEST_F(FenceStoreTest, ARecoveredDamagedFenceStillRefusesStepsToItsSessions) {
  WriteTwo();
  Sql(dir_, "UPDATE fences SET target = 'r7' WHERE key = 'alpha'");
  std::unique_ptr<SqliteSessionStore> store = Open();
  ASSERT_NE(store, nullptr);
  SessionManager sessions(Limits{}, /*pipeline=*/nullptr, store.get());
  absl::StatusOr<std::vector<std::string>> problems = sessions.Recover();
  ASSERT_TRUE(problems.ok()) << problems.status();
  EXPECT_THAT(*problems, ElementsAre(HasSubstr("fence of key 'alpha'")));
  const absl::Status fenced = sessions.CheckFence("alpha.member");
  EXPECT_EQ(fenced.code(), absl::StatusCode::kUnavailable) << fenced;
  EXPECT_THAT(fenced.message(), HasSubstr("<unknown: damaged fence record>"));
  EXPECT_EQ(sessions.CheckFence("beta").code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(sessions.CheckFence("gamma").ok());
}

}  // namespace
}  // namespace f2obo::server
