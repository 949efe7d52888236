// The store's reply cache (SqliteSessionStore::SaveReply, ReplaceReplies): after
// any sequence of steps, imports, rollbacks and changes of keep_replies it
// holds exactly the newest keep replies, as the server's own cache does;
// the steady state's single statement (the oldest row becomes the new
// reply's) keeps that; and rows keyed as earlier servers keyed a
// PutSession's replies (by the reply's own step) load and are trimmed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<int64_t> ReplySteps(const LoadedStore& loaded, const std::string& id) {
  std::vector<int64_t> out;
  for (const StoredSession& s : loaded.sessions) {
    if (s.id != id) continue;
    for (const v1::StepReply& r : s.replies) {
      EXPECT_EQ(r.SerializeAsString(), ReplyFor(id, r.t()).SerializeAsString()) << r.t();
      out.push_back(r.t());
    }
  }
  return out;
}

class ReplyCacheTest : public StoreTest {
 protected:
  std::unique_ptr<SqliteSessionStore> Open() {
    auto store = SqliteSessionStore::Open(dir_, Durability::kSync);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }
  // Steps `from`..`to` of session `id` (state t = from before), keeping `keep`.
  void Steps(SqliteSessionStore& store, const std::string& id, int64_t from, int64_t to, int keep) {
    for (int64_t t = from; t <= to; ++t) {
      ASSERT_TRUE(store.CommitStep(id, t + 1, StateBytes(t + 1, 1), ReplyFor(id, t), keep).ok())
          << t;
    }
  }
};

TEST_F(ReplyCacheTest, ManyStepsKeepExactlyTheNewestKeep) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1), 1).ok());
    Steps(*store, "a", 1, 2, 4);  // fewer than keep: every reply
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(1, 2));
  {
    auto store = Open();
    Steps(*store, "a", 3, 40, 4);
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  EXPECT_THAT(ReplySteps(loaded, "a"), ElementsAre(37, 38, 39, 40));
}

TEST_F(ReplyCacheTest, AShorterOrLongerKeepTakesEffectAtTheNextStep) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1), 1).ok());
    Steps(*store, "a", 1, 10, 5);
    Steps(*store, "a", 11, 11, 2);  // a restart with --reply_cache=2
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(10, 11));
  {
    auto store = Open();
    Steps(*store, "a", 12, 13, 6);  // then 6: nothing older comes back
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(10, 11, 12, 13));
  {
    auto store = Open();
    Steps(*store, "a", 14, 20, 6);
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(15, 16, 17, 18, 19, 20));
}

TEST_F(ReplyCacheTest, AnImportedCacheIsTrimmedLikeTheServersOwn) {
  // An import (or fork) at state t = 10 with the replies of steps 7-9, then
  // step 10 with keep 3: the server's cache holds 8, 9 and 10; so must the
  // store (it kept only 9 and 10 when imports were keyed by their step).
  {
    auto store = Open();
    ASSERT_TRUE(store
                    ->PutSession("a", SpecFor("a"), StateBytes(10, 1), 10,
                                 {ReplyFor("a", 7), ReplyFor("a", 8), ReplyFor("a", 9)})
                    .ok());
    Steps(*store, "a", 10, 10, 3);
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(8, 9, 10));
}

TEST_F(ReplyCacheTest, ARollbackSetsTheCacheAndStepsContinueFromIt) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(1, 1), 1).ok());
    Steps(*store, "a", 1, 9, 4);
    // Back to state t = 5, with the replies of steps 3 and 4 (a cache that
    // is not full), then on.
    ASSERT_TRUE(
        store->RollbackSession("a", 5, StateBytes(5, 1), {ReplyFor("a", 3), ReplyFor("a", 4)})
            .ok());
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(3, 4));
  {
    auto store = Open();
    Steps(*store, "a", 5, 8, 4);
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(5, 6, 7, 8));
}

TEST_F(ReplyCacheTest, RowsKeyedByAnEarlierServerLoadAndAreTrimmed) {
  // A store written before ReplaceReplies: an import's replies keyed by
  // their own step (7, 8, 9), with their checksums under those keys.
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), StateBytes(10, 1), 10).ok());
  }
  for (int64_t step : {7, 8, 9}) {
    const std::string bytes = ReplyFor("a", step).SerializeAsString();
    std::string hex;
    for (unsigned char c : bytes) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
    Sql(DbPath(dir_),
        absl::StrCat("INSERT INTO replies (id, t, reply, reply_sum) VALUES ('a', ", step, ", x'",
                     hex, "', ", store_detail::RecordSum("reply", "a", step, bytes), ")"));
  }
  const LoadedStore loaded = Reload(dir_);
  EXPECT_THAT(loaded.damaged, IsEmpty());
  EXPECT_THAT(ReplySteps(loaded, "a"), ElementsAre(7, 8, 9));
  {
    auto store = Open();
    Steps(*store, "a", 10, 14, 3);
  }
  EXPECT_THAT(ReplySteps(Reload(dir_), "a"), ElementsAre(12, 13, 14));
}

}  // namespace
}  // namespace f2obo::server
