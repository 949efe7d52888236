// The store keeps a session's state in parts: a step writes its
// head and the aux vectors it changed; LoadAll joins them back.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "core/state.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/store/store_fixture.h"

namespace f2obo::server {
namespace {

using ::testing::HasSubstr;

// A state at step t with `parts` aux vectors, part i = {i, t, seed}.
SessionState StateAt(int64_t t, double seed, int parts) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(4, seed);
  s.vectors = {Vector::Constant(3, -seed), Vector::Constant(3, seed)};
  s.scalars = {0.5};
  for (int i = 0; i < parts; ++i) {
    s.aux.push_back((Vector(3) << i, static_cast<double>(t), seed).finished());
  }
  return s;
}

std::string Whole(const SessionState& s) {
  return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
}

// What a step writes when the parts in `changed` (or all) differ from the
// state the store holds.
StepState Delta(const SessionState& s, const std::vector<int>& changed) {
  StepState out;
  out.head = SerializeCheckpointHead(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
  out.aux_count = static_cast<int64_t>(s.aux.size());
  for (int i : changed) out.aux_rows.emplace_back(i, EncodeAuxPart(s.aux[i]));
  return out;
}

int64_t PartRows(const std::string& db_path, const std::string& id) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM state_parts WHERE id = ?", -1, &q, nullptr);
  sqlite3_bind_text(q, 1, id.c_str(), -1, SQLITE_TRANSIENT);
  const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
  sqlite3_finalize(q);
  sqlite3_close(db);
  return n;
}

std::vector<int> All(const SessionState& s) {
  std::vector<int> out;
  for (size_t i = 0; i < s.aux.size(); ++i) out.push_back(static_cast<int>(i));
  return out;
}

TEST_F(StoreTest, AStepInPartsWritesOnlyItsChangesAndReloadsWhole) {
  SessionState s = StateAt(1, 2.0, 6);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
    // The first step after a put writes every part.
    s = StateAt(2, 2.0, 6);
    ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
    // Then only what changed: part 4 and a new part 6; part 1 emptied.
    s.t = 3;
    s.aux[4][0] = -4.0;
    s.aux.push_back(Vector::Ones(2));
    s.aux[1] = Vector();
    ASSERT_TRUE(store->CommitStep("a", 3, Delta(s, {1, 4, 6}), ReplyFor("a", 2), kKeep).ok());
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u) << ::testing::PrintToString(loaded.damaged);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(s));
  // One row per non-empty part: 7 parts, part 1 empty.
  EXPECT_EQ(PartRows(DbPath(dir_), "a"), 6);
}

TEST_F(StoreTest, ShrinkingAStateDropsThePartsBeyondIt) {
  SessionState s = StateAt(1, 1.0, 5);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
    s.t = 2;
    ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
    s.t = 3;
    s.aux.resize(2);
    ASSERT_TRUE(store->CommitStep("a", 3, Delta(s, {}), ReplyFor("a", 2), kKeep).ok());
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(s));
  EXPECT_EQ(PartRows(DbPath(dir_), "a"), 2);
}

TEST_F(StoreTest, BatchedStepsOfOneSessionKeepEveryStepsParts) {
  // Under kNone consecutive steps of a session share a transaction and only
  // the last writes its head; the earlier steps' parts must still land.
  SessionState s = StateAt(1, 3.0, 8);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kNone);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
    // Held before step 2 (the writer could otherwise be gathering it while
    // the hold is set), the writer takes the steps as one batch when released.
    store->HoldWriterForTesting(true);
    s.t = 2;
    ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
    for (int64_t t = 3; t <= 40; ++t) {
      s.t = t;
      const int i = static_cast<int>(t % 8);
      s.aux[i][1] = static_cast<double>(t);
      ASSERT_TRUE(store->CommitStep("a", t, Delta(s, {i}), ReplyFor("a", t - 1), kKeep).ok());
    }
    store->HoldWriterForTesting(false);
    // A part a later step of the same batch rewrites is written once (a
    // write waited for comes after the steps in the writer's queue).
    ASSERT_TRUE(store->DeleteSession("none").ok());
    EXPECT_GT(store->superseded_parts(), 0);
  }  // closing drains the queue
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(s));
}

TEST_F(StoreTest, ADamagedPartKeepsItsSessionFromLoading) {
  SessionState s = StateAt(1, 4.0, 3);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
    ASSERT_TRUE(store->PutSession("b", SpecFor("b"), Whole(s), 1).ok());
    s.t = 2;
    ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
    ASSERT_TRUE(store->CommitStep("b", 2, Delta(s, All(s)), ReplyFor("b", 1), kKeep).ok());
  }
  FlipByte(DbPath(dir_), "state_parts", "part", "id = 'a' AND idx = 1", 5);
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(loaded.sessions[0].id, "b");
  ASSERT_EQ(loaded.damaged.size(), 1u);
  EXPECT_THAT(loaded.damaged[0], HasSubstr("session 'a': state part 1 checksum mismatch"));
}

TEST_F(StoreTest, APutAfterPartsStoresTheWholeStateAgain) {
  SessionState s = StateAt(1, 5.0, 4);
  SessionState other = StateAt(9, 6.0, 2);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
    s.t = 2;
    ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
    // A new session of the same id (delete + create, or an import).
    ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(other), 9).ok());
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(other));
  EXPECT_EQ(PartRows(DbPath(dir_), "a"), 0);
}

TEST_F(StoreTest, AfterAFailedStepOnlyACompleteStateIsStored) {
  SessionState s = StateAt(1, 7.0, 4);
  auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
  ASSERT_TRUE(store->PutSession("a", SpecFor("a"), Whole(s), 1).ok());
  s.t = 2;
  ASSERT_TRUE(store->CommitStep("a", 2, Delta(s, All(s)), ReplyFor("a", 1), kKeep).ok());
  EXPECT_FALSE(store->NeedsCompleteState("a"));

  // Step 2's write fails: its change of part 0 is not stored.
  store->FailWritesForTesting(SQLITE_IOERR);
  s.t = 3;
  s.aux[0][0] = 100.0;
  EXPECT_FALSE(store->CommitStep("a", 3, Delta(s, {0}), ReplyFor("a", 2), kKeep).ok());
  store->FailWritesForTesting(SQLITE_OK);
  EXPECT_TRUE(store->NeedsCompleteState("a"));
  // A later delta (part 1 only) would store part 0 stale: refused.
  s.t = 4;
  s.aux[1][0] = 200.0;
  const absl::Status partial = store->CommitStep("a", 4, Delta(s, {1}), ReplyFor("a", 3), kKeep);
  EXPECT_EQ(partial.code(), absl::StatusCode::kFailedPrecondition) << partial;
  // The complete state is stored, and clears the flag.
  StepState complete = Delta(s, All(s));
  complete.complete = true;
  ASSERT_TRUE(store->CommitStep("a", 4, std::move(complete), ReplyFor("a", 3), kKeep).ok());
  EXPECT_FALSE(store->NeedsCompleteState("a"));
  store.reset();
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(s));
}

// A group step's write: several sessions' steps in one
// transaction.  When one of them cannot be stored (here: its session has no
// row), none is, and each session reloads at its previous step.
TEST_F(StoreTest, SeveralSessionsStepsAreStoredAllOrNone) {
  SessionState a = StateAt(1, 1.0, 2), b = StateAt(1, 2.0, 2);
  {
    auto store = *SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store->PutSession("g.a", SpecFor("g.a"), Whole(a), 1).ok());
    ASSERT_TRUE(store->PutSession("g.b", SpecFor("g.b"), Whole(b), 1).ok());
    const SessionState a2 = StateAt(2, 1.0, 2), b2 = StateAt(2, 2.0, 2);
    std::vector<SqliteSessionStore::SessionStep> both;
    both.push_back({"g.a", 2, Delta(a2, All(a2)), ReplyFor("g.a", 1), 0});
    both.push_back({"g.b", 2, Delta(b2, All(b2)), ReplyFor("g.b", 1), 0});
    ASSERT_TRUE(store->CommitSteps(both, kKeep).ok());
    a = a2;
    b = b2;
    const SessionState a3 = StateAt(3, 1.0, 2), c3 = StateAt(3, 3.0, 2);
    std::vector<SqliteSessionStore::SessionStep> broken;
    broken.push_back({"g.a", 3, Delta(a3, All(a3)), ReplyFor("g.a", 2), 0});
    broken.push_back({"g.missing", 3, Delta(c3, All(c3)), ReplyFor("g.missing", 2), 0});
    const absl::Status s = store->CommitSteps(broken, kKeep);
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  }
  LoadedStore loaded = Reload(dir_);
  ASSERT_EQ(loaded.sessions.size(), 2u) << ::testing::PrintToString(loaded.damaged);
  EXPECT_EQ(loaded.sessions[0].id, "g.a");
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[0].state), Whole(a))
      << "g.a kept a step its group did not store";
  EXPECT_EQ(loaded.sessions[0].replies.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(loaded.sessions[1].state), Whole(b));
}

}  // namespace
}  // namespace f2obo::server
