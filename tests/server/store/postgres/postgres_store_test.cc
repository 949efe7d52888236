// The PostgreSQL store against a real PostgreSQL (one cluster, a primary
// with a synchronous standby, for the whole binary; a database per test):
// what it adds to the store contract — compare-and-set between servers,
// schema refusal, connection failures, commit-unknown resolved by reading
// back, and kill -9 of the database mid-stream losing no acknowledged step.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "core/state.h"
#include "server/store/postgres/postgres_session_store.h"
#include "tests/server/store/postgres/pg_cluster.h"
#include "tests/server/store/postgres/pg_database_test.h"
#include "tests/server/store/postgres/pg_test_records.h"

namespace f2obo::server {
namespace {

using testing::PgCluster;
using testing::ReplyFor;
using testing::SpecFor;
using testing::StateBytes;

class PostgresStoreTest : public testing::PgDatabaseTest</*kSyncStandby=*/true> {
 protected:
  void SetUp() override {
    testing::PgDatabaseTest</*kSyncStandby=*/true>::SetUp();
    if (HasFatalFailure()) return;
    uri_ = pg_->UriOf(pg_->primary(), db_);
  }
  std::unique_ptr<PostgresSessionStore> Open(Durability d = Durability::kSync) {
    absl::StatusOr<std::unique_ptr<PostgresSessionStore>> s = PostgresSessionStore::Open(uri_, d);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
  std::string Sql(const std::string& sql) {
    absl::StatusOr<std::string> r = pg_->Query(pg_->primary(), sql, db_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }

  std::string uri_;
};

TEST_F(PostgresStoreTest, SessionsStepsGroupsAndFencesReloadBitExact) {
  auto store = Open();
  ASSERT_NE(store, nullptr);
  for (const std::string id : {"a", "b"}) {
    ASSERT_TRUE(store->PutSession(id, SpecFor(id), StateBytes(1, id[0]), 1).ok());
    for (int64_t t = 1; t <= 6; ++t) {
      ASSERT_TRUE(
          store->CommitStep(id, t + 1, StateBytes(t + 1, id[0]), ReplyFor(id, t), 3, 2).ok());
    }
  }
  ASSERT_TRUE(store->PutGroup("g", {"a", "b"}).ok());
  ASSERT_TRUE(store->PutFence("k1", "replica-2").ok());
  ASSERT_TRUE(store->PutFence("k2", "replica-3").ok());
  ASSERT_TRUE(store->PutFence("k2", "").ok());
  store.reset();
  auto again = Open();
  absl::StatusOr<LoadedStore> loaded = again->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE(loaded->damaged.empty());
  ASSERT_EQ(loaded->sessions.size(), 2u);
  for (const StoredSession& s : loaded->sessions) {
    EXPECT_EQ(SerializeCheckpoint(s.state), StateBytes(7, s.id[0]));
    EXPECT_EQ(s.spec.SerializeAsString(), SpecFor(s.id).SerializeAsString());
    ASSERT_EQ(s.replies.size(), 3u);
    EXPECT_EQ(s.replies[0].SerializeAsString(), ReplyFor(s.id, 4).SerializeAsString());
    EXPECT_EQ(s.replies[2].SerializeAsString(), ReplyFor(s.id, 6).SerializeAsString());
    EXPECT_EQ(s.checkpoints, (std::vector<int64_t>{6, 7}));
    absl::StatusOr<std::string> cp = again->LoadCheckpoint(s.id, 6);
    ASSERT_TRUE(cp.ok()) << cp.status();
    EXPECT_EQ(*cp, StateBytes(6, s.id[0]));
  }
  ASSERT_EQ(loaded->groups.size(), 1u);
  EXPECT_EQ(loaded->groups[0].members, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(loaded->fences.size(), 1u);
  EXPECT_EQ(loaded->fences[0].key, "k1");
  EXPECT_EQ(loaded->fences[0].target, "replica-2");
}

TEST_F(PostgresStoreTest, TwoServersNeverBothCommitOneStep) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a->PutSession("s", SpecFor("s"), StateBytes(1, 1), 1).ok());
  // Both copies are at t = 1; a commits step 1 first.
  ASSERT_TRUE(a->CommitStep("s", 2, StateBytes(2, 1), ReplyFor("s", 1), 4).ok());
  v1::StepReply other = ReplyFor("s", 1);
  other.add_x(99);
  absl::Status lost = b->CommitStep("s", 2, StateBytes(2, 2), other, 4);
  EXPECT_TRUE(absl::IsAborted(lost)) << lost;
  EXPECT_NE(lost.message().find("at step index 2"), std::string::npos) << lost;
  EXPECT_TRUE(absl::IsNotFound(b->CommitStep("nobody", 2, StateBytes(2, 1), other, 4)));
  // The store holds a's step, reply included: what b reloads and answers.
  absl::StatusOr<LoadedStore> truth = b->LoadAll();
  ASSERT_TRUE(truth.ok());
  ASSERT_EQ(truth->sessions.size(), 1u);
  EXPECT_EQ(SerializeCheckpoint(truth->sessions[0].state), StateBytes(2, 1));
  ASSERT_EQ(truth->sessions[0].replies.size(), 1u);
  EXPECT_EQ(truth->sessions[0].replies[0].SerializeAsString(),
            ReplyFor("s", 1).SerializeAsString());
  // Racing: of 2 x 50 attempts at steps 2..51, each step commits once.
  std::atomic<int> won{0}, aborted{0};
  const auto race = [&](PostgresSessionStore* s, double seed) {
    for (int64_t t = 2; t <= 51; ++t) {
      absl::Status r = s->CommitStep("s", t + 1, StateBytes(t + 1, seed), ReplyFor("s", t), 4);
      if (r.ok()) {
        ++won;
      } else if (absl::IsAborted(r)) {
        ++aborted;
        // Behind: catch up as a reloading server would (its copy = store's).
        while (true) {
          absl::StatusOr<StoredSession> l = s->LoadSession("s");
          if (!l.ok()) return;
          const int64_t at = l->state.state.t;
          if (at > t) {
            t = at - 1;
            break;
          }
        }
      }
    }
  };
  std::thread ta(race, a.get(), 1.0), tb(race, b.get(), 2.0);
  ta.join();
  tb.join();
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 's'"), "52");
  EXPECT_EQ(won.load(), 50);
}

TEST_F(PostgresStoreTest, TwoServersCreatingOneIdAtOnceKeepTheFirstAndRefuseTheOther) {
  auto a = Open();
  auto b = Open();
  // Each round, both create the same id with their own state at once;
  // exactly one is stored, the other is ALREADY_EXISTS and overwrote
  // nothing.
  for (int round = 0; round < 20; ++round) {
    const std::string id = "c" + std::to_string(round);
    absl::Status made[2];
    std::atomic<int> ready{0};
    const auto create = [&](PostgresSessionStore* s, int who) {
      ++ready;
      while (ready.load() < 2) {
      }
      made[who] = s->PutSession(id, SpecFor(id), StateBytes(1, who + 1.0), 1);
    };
    std::thread ta(create, a.get(), 0), tb(create, b.get(), 1);
    ta.join();
    tb.join();
    ASSERT_NE(made[0].ok(), made[1].ok()) << made[0] << " / " << made[1];
    const int winner = made[0].ok() ? 0 : 1;
    EXPECT_TRUE(absl::IsAlreadyExists(made[1 - winner])) << made[1 - winner];
    absl::StatusOr<StoredSession> stored = a->LoadSession(id);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(SerializeCheckpoint(stored->state), StateBytes(1, winner + 1.0)) << "overwritten";
  }
  // And a create of a stored id, not racing, the same.
  const absl::Status again = b->PutSession("c0", SpecFor("c0"), StateBytes(1, 9.0), 1);
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
  EXPECT_NE(SerializeCheckpoint(a->LoadSession("c0")->state), StateBytes(1, 9.0));
}

TEST_F(PostgresStoreTest, ACopyAtTheStoredStepIndexButRewrittenSinceIsRefused) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a->PutSession("s", SpecFor("s"), StateBytes(1, 1), 1).ok());
  for (int64_t t = 1; t <= 4; ++t) {
    ASSERT_TRUE(a->CommitStep("s", t + 1, StateBytes(t + 1, 1), ReplyFor("s", t), 4).ok());
  }
  // b reads it at 5, rolls it back to 3 and steps it to 5 again with other
  // data: the same step index as a's copy, other contents.
  ASSERT_TRUE(b->LoadSession("s").ok());
  ASSERT_TRUE(b->RollbackSession("s", 3, StateBytes(3, 1), {}, 5).ok());
  for (int64_t t = 3; t <= 4; ++t) {
    ASSERT_TRUE(b->CommitStep("s", t + 1, StateBytes(t + 1, 2), ReplyFor("s", t), 4).ok());
  }
  EXPECT_TRUE(b->CopyIsCurrent("s", 5).value_or(false));
  EXPECT_FALSE(a->CopyIsCurrent("s", 5).value_or(true)) << "a's copy taken for the stored one";
  // a's step 5 on its copy is refused (the step index alone would let it
  // through), nothing written.
  const absl::Status stale = a->CommitStep("s", 6, StateBytes(6, 1), ReplyFor("s", 5), 4);
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  EXPECT_NE(stale.message().find("written since"), std::string::npos) << stale;
  const absl::Status checkpoint = a->PutCheckpoint("s", 5, StateBytes(5, 1), 2);
  EXPECT_TRUE(absl::IsAborted(checkpoint)) << checkpoint;
  const absl::Status rollback = a->RollbackSession("s", 3, StateBytes(3, 1), {}, 5);
  EXPECT_TRUE(absl::IsAborted(rollback)) << rollback;
  absl::StatusOr<StoredSession> truth = b->LoadSession("s");
  ASSERT_TRUE(truth.ok()) << truth.status();
  EXPECT_EQ(SerializeCheckpoint(truth->state), StateBytes(5, 2));
  // Reloaded, a's copy is the stored one and steps on it.
  ASSERT_TRUE(a->LoadSession("s").ok());
  EXPECT_TRUE(a->CopyIsCurrent("s", 5).value_or(false));
  ASSERT_TRUE(a->CommitStep("s", 6, StateBytes(6, 2), ReplyFor("s", 5), 4).ok());
  // Now b's copy is the one behind.
  EXPECT_FALSE(b->CopyIsCurrent("s", 5).value_or(true));
  EXPECT_TRUE(absl::IsAborted(b->CommitStep("s", 6, StateBytes(6, 3), ReplyFor("s", 5), 4)));
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 's'"), "6");
}

TEST_F(PostgresStoreTest, AVersionOneDatabaseIsMigratedAndItsSessionsStep) {
  {
    auto store = Open();
    ASSERT_TRUE(store->PutSession("old", SpecFor("old"), StateBytes(1, 1), 1).ok());
    ASSERT_TRUE(store->CommitStep("old", 2, StateBytes(2, 1), ReplyFor("old", 1), 4).ok());
  }
  // The database as version 1 left it: without what version 2 added.
  Sql("ALTER TABLE f2obo_sessions DROP COLUMN gen; "
      "DROP SEQUENCE f2obo_gen; UPDATE f2obo_schema SET version = 1");
  ASSERT_EQ(Sql("SELECT count(*) FROM information_schema.columns WHERE column_name = 'gen'"), "0");
  auto a = Open();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(Sql("SELECT version FROM f2obo_schema"),
            std::to_string(PostgresSessionStore::kSchemaVersion));
  EXPECT_EQ(Sql("SELECT gen FROM f2obo_sessions WHERE id = 'old'"), "0");
  // Its sessions load and step, with write versions from now on.
  auto b = Open();
  absl::StatusOr<StoredSession> loaded = a->LoadSession("old");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(SerializeCheckpoint(loaded->state), StateBytes(2, 1));
  ASSERT_TRUE(b->LoadSession("old").ok());
  ASSERT_TRUE(a->CommitStep("old", 3, StateBytes(3, 1), ReplyFor("old", 2), 4).ok());
  EXPECT_NE(Sql("SELECT gen FROM f2obo_sessions WHERE id = 'old'"), "0");
  EXPECT_TRUE(absl::IsAborted(b->CommitStep("old", 3, StateBytes(3, 2), ReplyFor("old", 2), 4)));
  // Opening it again changes nothing.
  ASSERT_NE(Open(), nullptr);
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'old'"), "3");
}

TEST_F(PostgresStoreTest, NewerSchemaIsRefusedAndNothingWritten) {
  { ASSERT_NE(Open(), nullptr); }
  Sql("UPDATE f2obo_schema SET version = 99");
  const std::string tables = Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'");
  absl::StatusOr<std::unique_ptr<PostgresSessionStore>> s =
      PostgresSessionStore::Open(uri_, Durability::kSync);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("schema version 99"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("newer"), std::string::npos) << s.status();
  EXPECT_EQ(Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), tables);
  EXPECT_EQ(Sql("SELECT version FROM f2obo_schema"), "99");
}

TEST_F(PostgresStoreTest, WrongPasswordAndNoServerAreRefusedWithoutThePassword) {
  const std::string wrong = "postgresql://" + pg_->user() +
                            ":sekret-wrong-pw@127.0.0.1:" + std::to_string(pg_->primary().port()) +
                            "/" + db_;
  absl::StatusOr<std::unique_ptr<PostgresSessionStore>> s =
      PostgresSessionStore::Open(wrong, Durability::kSync);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsUnavailable(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("password authentication failed"), std::string::npos)
      << s.status();
  EXPECT_EQ(s.status().message().find("sekret-wrong-pw"), std::string::npos) << s.status();
  const std::string nowhere = "postgresql://" + pg_->user() + ":" + pg_->password() +
                              "@127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) + "/x";
  s = PostgresSessionStore::Open(nowhere, Durability::kSync);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsUnavailable(s.status())) << s.status();
  EXPECT_EQ(s.status().message().find(pg_->password()), std::string::npos) << s.status();
  // Nothing was written by the refused one.
  EXPECT_EQ(Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0");
}

// A stream of steps while the primary is killed (kill -9 of every
// PostgreSQL process) and restarted: steps fail UNAVAILABLE while it is
// down, resume after, and every acknowledged step is in the store.
TEST_F(PostgresStoreTest, KillNineOfTheDatabaseMidStreamLosesNoAcknowledgedStep) {
  auto store = Open();
  ASSERT_TRUE(store->PutSession("s", SpecFor("s"), StateBytes(1, 1), 1).ok());
  std::atomic<int64_t> acked{0};
  std::atomic<int> unavailable{0};
  std::atomic<bool> stop{false};
  std::thread stream([&] {
    for (int64_t t = 1; !stop.load();) {
      absl::Status r = store->CommitStep("s", t + 1, StateBytes(t + 1, 1), ReplyFor("s", t), 4);
      if (r.ok()) {
        acked = t++;
      } else if (absl::IsAborted(r)) {
        // A retry of a step whose first COMMIT did reach the database
        // (its outcome was unknown then): stored, not acknowledged; the
        // session reloaded as a server does, and continued from there.
        absl::StatusOr<StoredSession> l = store->LoadSession("s");
        ASSERT_TRUE(l.ok()) << l.status();
        ASSERT_EQ(l->state.state.t, t + 1);
        ++t;
      } else {
        ASSERT_TRUE(absl::IsUnavailable(r)) << r;
        ++unavailable;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a client's retry pause
      }
    }
  });
  const auto await_acked = [&](int64_t n) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (acked.load() < n && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return acked.load() >= n;
  };
  ASSERT_TRUE(await_acked(30));
  ASSERT_TRUE(pg_->primary().Kill().ok());
  const int64_t before = acked.load();
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (unavailable.load() == 0 && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_GT(unavailable.load(), 0) << "no step was refused while the database was down";
  ASSERT_TRUE(pg_->primary().Start().ok());
  EXPECT_TRUE(await_acked(before + 30)) << "the stream did not resume";
  stop = true;
  stream.join();
  EXPECT_GE(store->reconnects(), 1);
  absl::StatusOr<LoadedStore> loaded = Open()->LoadAll();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->sessions.size(), 1u);
  const int64_t last = acked.load();
  EXPECT_EQ(loaded->sessions[0].state.state.t, last + 1);
  EXPECT_EQ(SerializeCheckpoint(loaded->sessions[0].state), StateBytes(last + 1, 1));
  EXPECT_EQ(loaded->sessions[0].replies.back().SerializeAsString(),
            ReplyFor("s", last).SerializeAsString());
}

// The connection breaks during COMMIT (the backend is terminated while its
// COMMIT waits for the synchronous standby, after the local commit): the
// store reads the session back on a new connection and finds the step
// stored, so the step is acknowledged, not reported failed.
TEST_F(PostgresStoreTest, CommitWhoseOutcomeIsUnknownIsReadBack) {
  auto store = Open();
  ASSERT_TRUE(store->PutSession("s", SpecFor("s"), StateBytes(1, 1), 1).ok());
  ASSERT_TRUE(pg_->standby().Kill().ok());  // commits now wait for it
  absl::Status step;
  std::thread t([&] { step = store->CommitStep("s", 2, StateBytes(2, 1), ReplyFor("s", 1), 4); });
  const std::string waiting =
      "SELECT pid FROM pg_stat_activity WHERE wait_event = 'SyncRep' "
      "AND datname = '" +
      db_ + "'";
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string pid;
  while (pid.empty() && std::chrono::steady_clock::now() < limit) {
    pid = Sql(waiting);
    if (pid.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(pid.empty()) << "no COMMIT waited for the standby";
  Sql("SELECT pg_terminate_backend(" + pid + ")");
  t.join();
  EXPECT_TRUE(step.ok()) << step;
  EXPECT_EQ(store->commits_read_back(), 1);
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 's'"), "2");
  // The standby back, in sync again, for the tests after this one.
  ASSERT_TRUE(pg_->standby().Start().ok());
  ASSERT_TRUE(pg_->AwaitQuery(pg_->primary(),
                              "SELECT sync_state FROM pg_stat_replication WHERE "
                              "application_name = 'standby'",
                              "sync", std::chrono::seconds(60))
                  .ok());
}

TEST_F(PostgresStoreTest, AStoreAtItsSizeCapRefusesGrowthButNotDeletion) {
  auto store = Open();
  ASSERT_TRUE(store->PutSession("s", SpecFor("s"), StateBytes(1, 1.0), 1).ok());
  // Any database is larger than one byte.
  ASSERT_TRUE(store->LimitSize(1).ok());
  const absl::Status refused = store->PutSession("t", SpecFor("t"), StateBytes(1, 2.0), 1);
  EXPECT_TRUE(absl::IsResourceExhausted(refused)) << refused;
  EXPECT_NE(refused.message().find("--max_store_bytes"), absl::string_view::npos) << refused;
  EXPECT_TRUE(absl::IsNotFound(store->LoadSession("t").status())) << "written while refused";
  // Deleting frees room: allowed at the cap.
  EXPECT_TRUE(store->DeleteSession("s").ok());
  // Without a cap the same write is stored.
  ASSERT_TRUE(store->LimitSize(0).ok());
  EXPECT_TRUE(store->PutSession("t", SpecFor("t"), StateBytes(1, 2.0), 1).ok());
  EXPECT_TRUE(store->LoadSession("t").ok());
}

}  // namespace
}  // namespace f2obo::server
