// Any replica serves any session: real f2obo-server processes sharing one
// PostgreSQL (--store=postgresql://...), no proxy.  A session created on
// one replica is stepped on another; a replica's stale copy never commits
// (the compare-and-set catches it, also a copy at the stored step index that
// another replica rewrote) and answers from the stored session; two
// replicas creating one id at once store one session; two
// replicas stepping one session at once commit each step exactly once; an
// evicted session reloads bit-exact; no conflict ever reaches a client as
// INTERNAL.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "core/state.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/pg_cluster.h"
#include "tests/server/store/postgres/pg_database_test.h"

namespace f2obo {
namespace {

using testing::PgCluster;
using testing::ServerProcess;

class SharedStoreTest : public testing::PgDatabaseTest<> {
 protected:
  void SetUp() override {
    testing::PgDatabaseTest<>::SetUp();
    if (HasFatalFailure()) return;
    f_ = testing::AllFamilyCases()[2];
    spec_ = testing::SpecFor(f_, testing::AllAlgorithms()[0], 7);
    spec_.mutable_metrics()->set_exact_every(0);  // keeps the state deterministic
  }
  std::unique_ptr<ServerProcess> Replica(std::vector<std::string> flags = {}) {
    flags.push_back("--store=" + pg_->UriOf(pg_->primary(), db_));
    auto r = std::make_unique<ServerProcess>(flags);
    EXPECT_TRUE(r->started()) << r->Stderr();
    return r;
  }
  std::string Sql(const std::string& sql) {
    absl::StatusOr<std::string> r = pg_->Query(pg_->primary(), sql, db_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }
  void Create(client::Client& c, const std::string& id) {
    v1::CreateSessionRequest create;
    create.set_session_id(id);
    *create.mutable_spec() = spec_;
    absl::StatusOr<v1::SessionInfo> info = c.CreateSession(create);
    ASSERT_TRUE(info.ok()) << info.status();
  }
  absl::StatusOr<v1::StepReply> Step(client::Client& c, const std::string& id, int64_t t) {
    return c.Step(testing::RequestFor(f_, id, t));
  }
  // Session `id`'s state as replica `c` exports it, checked bit-equal to
  // `steps` uninterrupted steps on one core session.
  void ExpectBitEqual(client::Client& c, const std::string& id, int64_t steps) {
    v1::ExportSessionRequest req;
    req.set_session_id(id);
    v1::SessionExport ex;
    auto ctx = c.NewContext();
    const grpc::Status exported = c.stub().ExportSession(ctx.get(), req, &ex);
    ASSERT_TRUE(exported.ok()) << exported.error_message();
    absl::StatusOr<Checkpoint> state = DeserializeCheckpoint(ex.state());
    ASSERT_TRUE(state.ok()) << state.status();
    ASSERT_EQ(state->state.t, steps + 1);
    absl::StatusOr<Checkpoint> expected = testing::CoreState(f_, spec_, steps);
    ASSERT_TRUE(expected.ok()) << expected.status();
    // The session's state (x, the algorithm's vectors, its RNG), bit for
    // bit; the running metric sums are not compared (a reloaded session's
    // come from its last stored step).
    EXPECT_TRUE(state->state.BitEquals(expected->state)) << id << ": differs from a single run";
  }
  static std::string Metric(const ServerProcess& s, const std::string& name) {
    const std::string text = testing::HttpGet(s.metrics_port(), "/metrics");
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return "";
    const size_t from = at + name.size() + 2;
    return text.substr(from, text.find('\n', from) - from);
  }

  testing::FamilyCase f_;
  v1::SessionSpec spec_;
};

TEST_F(SharedStoreTest, ASessionCreatedOnOneReplicaStepsOnAnotherAndAStaleCopyNeverCommits) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  auto a = Replica(), b = Replica();
  client::Client ca(client::ClientOptions{a->target()}), cb(client::ClientOptions{b->target()});
  Create(ca, "roam");
  std::map<int64_t, v1::StepReply> replies;  // t -> the acknowledged reply
  for (int64_t t = 1; t <= 10; ++t) {
    absl::StatusOr<v1::StepReply> r = Step(ca, "roam", t);
    ASSERT_TRUE(r.ok()) << r.status();
    replies[t] = *r;
  }
  // B never saw it: loaded from the store when asked for, and stepped on.
  for (int64_t t = 11; t <= 20; ++t) {
    absl::StatusOr<v1::StepReply> r = Step(cb, "roam", t);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE(r->replayed());
    replies[t] = *r;
  }
  // A's copy is still at 11.  Step 11 matches it, but the stored session
  // is at 21: the compare-and-set refuses A's write, A reloads and answers
  // the retry of an acknowledged step from the reply cache: B's reply.
  absl::StatusOr<v1::StepReply> again = Step(ca, "roam", 11);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed());
  EXPECT_EQ(again->x().size(), replies[11].x().size());
  for (int i = 0; i < again->x().size(); ++i) EXPECT_EQ(again->x(i), replies[11].x(i)) << i;
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'roam'"), "21")
      << "a stale copy committed";
  // A step at the wrong index is refused as on one replica, naming the
  // stored session's expected index.
  absl::StatusOr<v1::StepReply> wrong = Step(ca, "roam", 25);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kFailedPrecondition) << wrong.status();
  EXPECT_NE(wrong.status().message().find("21"), std::string::npos) << wrong.status();
  // And A goes on from the stored session.
  for (int64_t t = 21; t <= 30; ++t) {
    absl::StatusOr<v1::StepReply> r = Step(t % 2 == 0 ? ca : cb, "roam", t);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  absl::StatusOr<v1::SessionInfo> info = cb.GetSession("roam");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->next_t(), 31);
  ExpectBitEqual(ca, "roam", 30);
  ExpectBitEqual(cb, "roam", 30);
  EXPECT_NE(Metric(*a, "f2obo_store_conflicts_resolved_total"), "0");
}

TEST_F(SharedStoreTest, TwoReplicasSteppingOneSessionAtOnceCommitEachStepExactlyOnce) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  constexpr int64_t kSteps = 60;
  auto a = Replica(), b = Replica();
  client::Client ca(client::ClientOptions{a->target()}), cb(client::ClientOptions{b->target()});
  Create(ca, "race");
  // Each client walks t = 1..kSteps on its own replica, the same batches.
  struct Outcome {
    std::map<int64_t, v1::StepReply> ok;
    std::vector<std::string> bad;  // codes other than OK / FAILED_PRECONDITION
    int refused = 0;
  };
  Outcome out[2];
  const auto walk = [&](client::Client& c, Outcome& o) {
    for (int64_t t = 1; t <= kSteps;) {
      absl::StatusOr<v1::StepReply> r = Step(c, "race", t);
      if (r.ok()) {
        o.ok[t++] = *r;
      } else if (absl::IsFailedPrecondition(r.status())) {
        ++o.refused;  // the other one is past t beyond the reply cache
        ++t;
      } else if (absl::IsUnavailable(r.status())) {
        continue;  // the session moved on at every reload: retried
      } else {
        o.bad.push_back(absl::StrCat(t, ": ", r.status().ToString()));
        ++t;
      }
    }
  };
  std::thread ta([&] { walk(ca, out[0]); });
  std::thread tb([&] { walk(cb, out[1]); });
  ta.join();
  tb.join();
  EXPECT_TRUE(out[0].bad.empty()) << out[0].bad.front();
  EXPECT_TRUE(out[1].bad.empty()) << out[1].bad.front();
  for (int64_t t = 1; t <= kSteps; ++t) {
    // Exactly one commit of each step: one reply applied, any other one
    // replayed from the cache, and the same x.
    int applied = 0;
    const v1::StepReply* first = nullptr;
    for (Outcome& o : out) {
      const auto it = o.ok.find(t);
      if (it == o.ok.end()) continue;
      applied += it->second.replayed() ? 0 : 1;
      if (first == nullptr) {
        first = &it->second;
        continue;
      }
      ASSERT_EQ(it->second.x().size(), first->x().size());
      for (int i = 0; i < first->x().size(); ++i) {
        EXPECT_EQ(it->second.x(i), first->x(i)) << "t = " << t << ": divergent replies";
      }
    }
    EXPECT_EQ(applied, 1) << "step " << t << " committed " << applied << " times";
  }
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'race'"), std::to_string(kSteps + 1));
  ExpectBitEqual(ca, "race", kSteps);
  ExpectBitEqual(cb, "race", kSteps);
}

TEST_F(SharedStoreTest, TwoReplicasCreatingOneIdAtOnceOneGetsItTheOtherAlreadyExists) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  auto a = Replica(), b = Replica();
  client::Client ca(client::ClientOptions{a->target()}), cb(client::ClientOptions{b->target()});
  // Session inserts wait behind a lock the test holds (reads do not), so
  // both replicas find the id free and both write it: the store decides.
  PGconn* lock = PQconnectdb(pg_->UriOf(pg_->primary(), db_).c_str());
  ASSERT_EQ(PQstatus(lock), CONNECTION_OK) << PQerrorMessage(lock);
  Sql("SELECT 1 FROM f2obo_sessions");  // the schema exists
  PQclear(PQexec(lock, "BEGIN"));
  PGresult* locked = PQexec(lock, "LOCK TABLE f2obo_sessions IN EXCLUSIVE MODE");
  ASSERT_EQ(PQresultStatus(locked), PGRES_COMMAND_OK) << PQerrorMessage(lock);
  PQclear(locked);
  absl::StatusOr<v1::SessionInfo> made[2];
  const auto create = [&](client::Client& c, int who) {
    v1::CreateSessionRequest req;
    req.set_session_id("twin");
    *req.mutable_spec() = spec_;
    req.mutable_spec()->set_seed(100 + who);  // each replica's own session
    made[who] = c.CreateSession(req);
  };
  std::thread ta(create, std::ref(ca), 0), tb(create, std::ref(cb), 1);
  ASSERT_TRUE(pg_->AwaitQuery(pg_->primary(),
                              "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = "
                              "'Lock' AND datname = '" +
                                  db_ + "'",
                              "2", std::chrono::seconds(60))
                  .ok())
      << "the two creates did not both reach the store";
  PQclear(PQexec(lock, "COMMIT"));
  PQfinish(lock);
  ta.join();
  tb.join();
  ASSERT_NE(made[0].ok(), made[1].ok()) << made[0].status() << " / " << made[1].status();
  const int winner = made[0].ok() ? 0 : 1;
  EXPECT_EQ(made[1 - winner].status().code(), absl::StatusCode::kAlreadyExists)
      << made[1 - winner].status();
  // The first one's session, on both replicas; nothing overwritten.
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_sessions"), "1");
  for (client::Client* c : {&ca, &cb}) {
    absl::StatusOr<v1::SessionInfo> info = c->GetSession("twin");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->spec().seed(), static_cast<uint64_t>(100 + winner));
  }
  // The loser's replica steps the winner's session.
  client::Client& loser = winner == 0 ? cb : ca;
  absl::StatusOr<v1::StepReply> r = Step(loser, "twin", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'twin'"), "2");
}

// Replica B rolls a session back and steps it to the index replica A's copy
// is at, with other batches: A's copy has the right t and the wrong
// contents.  A must not step on it (the step index alone would let it
// commit): it reads, and steps, B's session.
TEST_F(SharedStoreTest, ACopyRewrittenToItsStepIndexOnAnotherReplicaIsReloaded) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  auto a = Replica(), b = Replica();
  client::Client ca(client::ClientOptions{a->target()}), cb(client::ClientOptions{b->target()});
  // Step t with the batches of step t + 100: other data.
  const auto other = [&](client::Client& c, const std::string& id, int64_t t) {
    v1::StepRequest req = testing::RequestFor(f_, id, t + 100);
    req.set_t(t);
    return c.Step(req);
  };
  Create(ca, "s");
  for (int64_t t = 1; t <= 2; ++t) ASSERT_TRUE(Step(ca, "s", t).ok());
  ASSERT_TRUE(ca.CheckpointSession("s").ok());  // at next_t = 3
  for (int64_t t = 3; t <= 4; ++t) ASSERT_TRUE(Step(ca, "s", t).ok());
  // A holds s at next_t = 5.  B: back to 3, then steps 3 and 4 on other data.
  absl::StatusOr<v1::SessionInfo> back = cb.RollbackSession("s", 2);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->next_t(), 3);
  for (int64_t t = 3; t <= 4; ++t) {
    absl::StatusOr<v1::StepReply> r = other(cb, "s", t);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  // The truth, computed apart: a session with B's history, on B.
  Create(cb, "ref");
  for (int64_t t = 1; t <= 2; ++t) ASSERT_TRUE(Step(cb, "ref", t).ok());
  for (int64_t t = 3; t <= 4; ++t) ASSERT_TRUE(other(cb, "ref", t).ok());
  const auto expect_same_x = [](const auto& got, const auto& want, const std::string& what) {
    ASSERT_EQ(got.x_size(), want.x_size()) << what;
    for (int i = 0; i < want.x_size(); ++i) EXPECT_EQ(got.x(i), want.x(i)) << what << " x" << i;
  };
  // A's reads answer B's session.
  absl::StatusOr<v1::Decision> read = ca.GetDecision("s");
  absl::StatusOr<v1::Decision> truth = cb.GetDecision("ref");
  ASSERT_TRUE(read.ok() && truth.ok()) << read.status() << truth.status();
  expect_same_x(*read, *truth, "A's GetDecision");
  // A's step 5 is applied to B's session, once.
  absl::StatusOr<v1::StepReply> stepped = Step(ca, "s", 5);
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  EXPECT_FALSE(stepped->replayed());
  absl::StatusOr<v1::StepReply> want = Step(cb, "ref", 5);
  ASSERT_TRUE(want.ok()) << want.status();
  expect_same_x(*stepped, *want, "A's step 5");
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 's'"), "6");
  // B's copy is now the one behind: its retry of step 5 is A's reply.
  absl::StatusOr<v1::StepReply> retried = Step(cb, "s", 5);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->replayed());
  expect_same_x(*retried, *want, "B's retry of step 5");
}

TEST_F(SharedStoreTest, AGroupCreatedOnAnotherReplicaAfterStartIsServedAndGuarded) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  auto a = Replica(), b = Replica();  // both started before the group exists
  client::Client ca(client::ClientOptions{a->target()}), cb(client::ClientOptions{b->target()});
  v1::CreateGroupRequest create;
  create.set_group_id("cmp");
  *create.mutable_spec() = spec_;
  for (const char* name : {"one", "two"}) {
    v1::GroupMember* m = create.add_members();
    m->set_name(name);
    m->set_algorithm(spec_.algorithm());
  }
  ASSERT_TRUE(ca.CreateGroup(create).ok());
  const auto group_step = [&](client::Client& c, int64_t t) {
    const v1::StepRequest single = testing::RequestFor(f_, "", t);
    v1::GroupStepRequest req;
    req.set_group_id("cmp");
    req.set_t(t);
    *req.mutable_upper() = single.upper();
    *req.mutable_inner() = single.inner();
    return c.StepGroup(req);
  };
  // B learns the group from the store: it reads it and steps it, and the
  // steps alternate between the replicas.
  absl::StatusOr<v1::GroupInfo> info = cb.GetGroup("cmp");
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->members_size(), 2);
  EXPECT_EQ(info->members(0).session_id(), "cmp.one");
  for (int64_t t = 1; t <= 6; ++t) {
    absl::StatusOr<v1::GroupStepReply> r = group_step(t % 2 == 0 ? ca : cb, t);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->members_size(), 2);
    for (const v1::MemberStepResult& m : r->members()) {
      EXPECT_TRUE(m.has_reply()) << m.session_id() << ": " << m.message();
    }
  }
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'cmp.two'"), "7");
  // A member is not deleted or rolled back alone, on a replica that never
  // served the group either.
  auto c = Replica();
  client::Client cc(client::ClientOptions{c->target()});
  const absl::Status deleted = cc.DeleteSession("cmp.one");
  EXPECT_EQ(deleted.code(), absl::StatusCode::kFailedPrecondition) << deleted;
  EXPECT_NE(deleted.message().find("group 'cmp'"), std::string::npos) << deleted;
  absl::StatusOr<v1::SessionInfo> rolled = cc.RollbackSession("cmp.two", 0);
  EXPECT_EQ(rolled.status().code(), absl::StatusCode::kFailedPrecondition) << rolled.status();
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_sessions"), "2");
  // And it deletes the group it never served, members with it.
  ASSERT_TRUE(cc.DeleteGroup("cmp").ok());
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_sessions"), "0");
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_groups"), "0");
}

TEST_F(SharedStoreTest, EvictedSessionsReloadOnDemandAndStepBitEqual) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  constexpr int kSessions = 5;
  constexpr int64_t kSteps = 12;
  // Two sessions held at most: stepping five in turn evicts and reloads
  // each of them at every step.
  auto a = Replica({"--max_resident_sessions=2"});
  client::Client c(client::ClientOptions{a->target()});
  for (int s = 0; s < kSessions; ++s) Create(c, "ev" + std::to_string(s));
  for (int64_t t = 1; t <= kSteps; ++t) {
    for (int s = 0; s < kSessions; ++s) {
      absl::StatusOr<v1::StepReply> r = Step(c, "ev" + std::to_string(s), t);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_FALSE(r->replayed());
    }
  }
  // Every session is listed, held in memory or not.
  absl::StatusOr<v1::ListSessionsResponse> listed = c.ListSessions();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->sessions_size(), kSessions);
  for (int s = 0; s < kSessions; ++s) ExpectBitEqual(c, "ev" + std::to_string(s), kSteps);
  EXPECT_GE(std::stoll(Metric(*a, "f2obo_store_sessions_evicted_total")), kSessions * kSteps / 2);
  EXPECT_GE(std::stoll(Metric(*a, "f2obo_store_sessions_loaded_total")), kSessions * kSteps / 2);
  EXPECT_LE(std::stoll(Metric(*a, "f2obo_sessions_resident")), 2);
}

}  // namespace
}  // namespace f2obo
