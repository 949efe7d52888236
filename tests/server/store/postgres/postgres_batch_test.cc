// The PostgreSQL store's cross-session group commit (pg_batcher.h) against
// a real PostgreSQL (a primary with a synchronous standby): steps of
// several sessions queued at one moment commit as one transaction, a
// compare-and-set that misses in it aborts no other step, a statement that
// fails sends its neighbours alone, and a batch whose connection broke is
// read back step by step, never guessed.
//
// A batch is held in flight by a row lock taken from outside (or by a
// commit waiting for a killed standby), so which steps queue together is
// decided by the test, not by timing.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/state.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/postgres_session_store.h"
#include "tests/server/store/postgres/pg_cluster.h"
#include "tests/server/store/postgres/pg_database_test.h"
#include "tests/server/store/postgres/pg_test_records.h"

namespace f2obo::server {
namespace {

using testing::ReplyFor;
using testing::SpecFor;
using testing::StateBytes;

class PostgresBatchTest : public testing::PgDatabaseTest</*kSyncStandby=*/true> {
 protected:
  void SetUp() override {
    testing::PgDatabaseTest</*kSyncStandby=*/true>::SetUp();
    if (HasFatalFailure()) return;
    uri_ = pg_->UriOf(pg_->primary(), db_);
    absl::StatusOr<std::unique_ptr<PostgresSessionStore>> s =
        PostgresSessionStore::Open(uri_, Durability::kSync);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = *std::move(s);
    for (const std::string id : {"a", "bad", "good", "b", "c"}) {
      ASSERT_TRUE(store_->PutSession(id, SpecFor(id), StateBytes(1, id[0]), 1).ok());
    }
  }
  std::string Sql(const std::string& sql) {
    absl::StatusOr<std::string> r = pg_->Query(pg_->primary(), sql, db_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }
  std::string NextT(const std::string& id) {
    return Sql("SELECT next_t FROM f2obo_sessions WHERE id = '" + id + "'");
  }
  // Polls `done` (an observable state, not a delay) for up to 30 s.
  static bool Await(const std::function<bool()>& done) {
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
      if (std::chrono::steady_clock::now() > limit) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  // Backends of this database waiting: for a row lock ("Lock") or for the
  // synchronous standby ("SyncRep").
  std::string Waiting(const std::string& what) {
    return Sql("SELECT count(*) FROM pg_stat_activity WHERE datname = '" + db_ +
               "' AND (wait_event_type = '" + what + "' OR wait_event = '" + what + "')");
  }
  // A step of session `id` from step index `t` on a thread of its own.
  std::thread Step(const std::string& id, int64_t t, absl::Status* out) {
    return std::thread([this, id, t, out] {
      *out = store_->CommitStep(id, t + 1, StateBytes(t + 1, id[0]), ReplyFor(id, t), 4);
    });
  }
  // Session a's step held in flight by its row locked from outside: the
  // steps queued after it wait for a batch of their own.
  void HoldABatchInFlight(pg::Conn* blocker, absl::Status* a, std::thread* ta) {
    ASSERT_TRUE(blocker->Exec("locking", "BEGIN").ok());
    ASSERT_TRUE(
        blocker->Exec("locking", "SELECT 1 FROM f2obo_sessions WHERE id = 'a' FOR UPDATE").ok());
    *ta = Step("a", 1, a);
    ASSERT_TRUE(Await([&] { return Waiting("Lock") == "1"; })) << "a's step never waited";
    ASSERT_EQ(store_->step_batches(), 1);
  }

  std::string uri_;
  std::unique_ptr<PostgresSessionStore> store_;
};

TEST_F(PostgresBatchTest, StepsQueuedTogetherCommitAsOneBatchAndAMissedCompareAndSetAbortsNoOther) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> blocker = pg::Conn::Connect(uri_);
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  absl::Status a, b, c;
  std::thread ta;
  HoldABatchInFlight(blocker->get(), &a, &ta);
  if (HasFatalFailure()) return;
  // b waits (one batch in flight, one step queued); c's arrival makes two,
  // and b leads them as one batch.  c's copy is not at the stored index:
  // its compare-and-set misses, and b's step commits all the same.
  std::thread tb = Step("b", 1, &b);
  ASSERT_TRUE(Await([&] { return store_->steps_queued() == 1; }));
  std::thread tc = Step("c", 2, &c);
  tb.join();
  tc.join();
  EXPECT_TRUE(b.ok()) << b;
  EXPECT_TRUE(absl::IsAborted(c)) << c;
  EXPECT_NE(c.message().find("at step index 1"), std::string::npos) << c;
  EXPECT_EQ(store_->step_batches(), 2);
  EXPECT_EQ(store_->batched_steps(), 3);
  EXPECT_EQ(NextT("b"), "2");
  EXPECT_EQ(NextT("c"), "1");
  EXPECT_EQ(NextT("a"), "1");  // still held
  ASSERT_TRUE((*blocker)->Exec("unlocking", "ROLLBACK").ok());
  ta.join();
  EXPECT_TRUE(a.ok()) << a;
  EXPECT_EQ(NextT("a"), "2");
  absl::StatusOr<StoredSession> stored = store_->LoadSession("b");
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(SerializeCheckpoint(stored->state), StateBytes(2, 'b'));
  ASSERT_EQ(stored->replies.size(), 1u);
  EXPECT_EQ(stored->replies[0].SerializeAsString(), ReplyFor("b", 1).SerializeAsString());
}

TEST_F(PostgresBatchTest, AFailedStatementAbortsItsBatchAndItsNeighboursCommitAlone) {
  // Session 'bad''s row refuses every update (a trigger of the test's).
  Sql("CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN "
      "IF NEW.id = 'bad' THEN RAISE EXCEPTION 'bad is refused'; END IF; RETURN NEW; END $f$");
  Sql("CREATE TRIGGER refuse_bad BEFORE UPDATE ON f2obo_sessions FOR EACH ROW "
      "EXECUTE FUNCTION refuse_bad()");
  absl::StatusOr<std::unique_ptr<pg::Conn>> blocker = pg::Conn::Connect(uri_);
  ASSERT_TRUE(blocker.ok()) << blocker.status();
  absl::Status a, good, bad;
  std::thread ta;
  HoldABatchInFlight(blocker->get(), &a, &ta);
  if (HasFatalFailure()) return;
  std::thread tg = Step("good", 1, &good);
  ASSERT_TRUE(Await([&] { return store_->steps_queued() == 1; }));
  std::thread tbad = Step("bad", 1, &bad);
  tg.join();
  tbad.join();
  // One batch of the two, aborted by bad's statement: each ran again
  // alone, good's committed, bad's refused with the database's reason.
  EXPECT_EQ(store_->step_batches(), 2);
  EXPECT_EQ(store_->batched_steps(), 3);
  EXPECT_TRUE(good.ok()) << good;
  EXPECT_TRUE(absl::IsInternal(bad)) << bad;
  EXPECT_NE(bad.message().find("bad is refused"), std::string::npos) << bad;
  EXPECT_EQ(NextT("good"), "2");
  EXPECT_EQ(NextT("bad"), "1");
  ASSERT_TRUE((*blocker)->Exec("unlocking", "ROLLBACK").ok());
  ta.join();
  EXPECT_TRUE(a.ok()) << a;
}

TEST_F(PostgresBatchTest, ABatchWhoseConnectionBrokeIsReadBackStepByStep) {
  ASSERT_TRUE(pg_->standby().Kill().ok());  // commits now wait for it
  absl::Status a, b, c;
  // a's commit waits for the standby (a batch in flight); b and c queue
  // and go as one batch, which waits too.
  std::thread ta = Step("a", 1, &a);
  ASSERT_TRUE(Await([&] { return Waiting("SyncRep") == "1"; }));
  std::thread tb = Step("b", 1, &b);
  ASSERT_TRUE(Await([&] { return store_->steps_queued() == 1; }));
  std::thread tc = Step("c", 1, &c);
  ASSERT_TRUE(Await([&] { return Waiting("SyncRep") == "2"; }));
  EXPECT_EQ(store_->step_batches(), 2);
  EXPECT_EQ(store_->batched_steps(), 3);
  // Both connections cut while their commits wait: committed locally, the
  // outcome unknown to the store, which reads each step back.
  Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep' "
      "AND datname = '" +
      db_ + "'");
  ta.join();
  tb.join();
  tc.join();
  EXPECT_TRUE(a.ok()) << a;
  EXPECT_TRUE(b.ok()) << b;
  EXPECT_TRUE(c.ok()) << c;
  EXPECT_EQ(store_->commits_read_back(), 3);
  for (const std::string id : {"a", "b", "c"}) EXPECT_EQ(NextT(id), "2") << id;
  // The standby back, in sync again, for the tests after this one.
  ASSERT_TRUE(pg_->standby().Start().ok());
  ASSERT_TRUE(pg_->AwaitQuery(pg_->primary(),
                              "SELECT sync_state FROM pg_stat_replication WHERE "
                              "application_name = 'standby'",
                              "sync", std::chrono::seconds(60))
                  .ok());
}

}  // namespace
}  // namespace f2obo::server
