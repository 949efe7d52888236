// f2obo-server --store=postgresql://... end to end, against a real
// PostgreSQL (one for the binary): bad configuration refused at start with
// a clear message, a non-zero exit and nothing written; a stream of steps
// through kill -9 of the server and of PostgreSQL losing no acknowledged
// step, the sessions bit-equal to an uninterrupted run; the rebalance's
// fences refused on a shared store (there is nothing to move).
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "core/state.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo {
namespace {

using testing::PgCluster;
using testing::ServerProcess;

class PostgresServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<PgCluster>> c = PgCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status();
    pg_ = c->release();
  }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(pg_, nullptr);
    static int n = 0;
    db_ = "server_" + std::to_string(++n);
    ASSERT_TRUE(pg_->CreateDatabase(db_).ok());
  }
  // The database's URI without the password (PGPASSWORD supplies it).
  std::string Uri() const {
    return "postgresql://" + pg_->user() + "@127.0.0.1:" + std::to_string(pg_->primary().port()) +
           "/" + db_;
  }
  std::string Sql(const std::string& sql) {
    absl::StatusOr<std::string> r = pg_->Query(pg_->primary(), sql, db_);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : "";
  }
  std::string Tables() { return Sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); }
  // Starts a server that must refuse to start; returns its stderr, and
  // checks it exited non-zero without writing its data directory.
  std::string Refused(const std::vector<std::string>& flags) {
    const std::string dir = testing::MakeTempDir();
    ServerProcess server(flags, dir);
    EXPECT_FALSE(server.started()) << server.banner();
    const int code = server.Stop(SIGKILL);
    EXPECT_NE(code, 0);
    EXPECT_NE(code, 128 + SIGKILL) << "it did not exit by itself";
    EXPECT_TRUE(std::filesystem::is_empty(dir)) << "the embedded store was written";
    std::filesystem::remove_all(dir);
    return server.Stderr();
  }

  static PgCluster* pg_;
  std::string db_;
};
PgCluster* PostgresServerTest::pg_ = nullptr;

TEST_F(PostgresServerTest, UnreachableDatabaseWrongPasswordAndNewerSchemaAreRefusedAtStart) {
  // No server on that port.
  std::string err =
      Refused({"--store=postgresql://" + pg_->user() + ":" + pg_->password() +
               "@127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()) + "/" + db_});
  EXPECT_NE(err.find("--store: cannot connect to PostgreSQL"), std::string::npos) << err;
  EXPECT_EQ(err.find(pg_->password()), std::string::npos) << "the password was printed";
  // A wrong password, in the URI and in PGPASSWORD.
  err = Refused({"--store=postgresql://" + pg_->user() +
                 ":wrong-pw-123@127.0.0.1:" + std::to_string(pg_->primary().port()) + "/" + db_});
  EXPECT_NE(err.find("password authentication failed"), std::string::npos) << err;
  EXPECT_EQ(err.find("wrong-pw-123"), std::string::npos) << "the password was printed";
  {
    testing::ScopedEnv env("PGPASSWORD", "wrong-pw-456");
    err = Refused({"--store=" + Uri()});
  }
  EXPECT_NE(err.find("password authentication failed"), std::string::npos) << err;
  EXPECT_EQ(Tables(), "0") << "a refused server wrote the database";
  // A schema from a newer server.
  {
    testing::ScopedEnv env("PGPASSWORD", pg_->password());
    ServerProcess first({"--store=" + Uri()});
    ASSERT_TRUE(first.started()) << first.Stderr();
  }
  Sql("UPDATE f2obo_schema SET version = 99");
  const std::string tables = Tables();
  {
    testing::ScopedEnv env("PGPASSWORD", pg_->password());
    err = Refused({"--store=" + Uri()});
  }
  EXPECT_NE(err.find("schema version 99"), std::string::npos) << err;
  EXPECT_NE(err.find("newer"), std::string::npos) << err;
  EXPECT_EQ(Tables(), tables);
  EXPECT_EQ(Sql("SELECT version FROM f2obo_schema"), "99");
}

TEST_F(PostgresServerTest, RebalanceFencesAreRefusedAndDropNothingOnASharedStore) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  ServerProcess server({"--store=" + Uri()});
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::Client c(client::ClientOptions{server.target()});
  v1::CreateSessionRequest create;
  create.set_session_id("kept");
  *create.mutable_spec() = testing::SpecFor(testing::AllFamilyCases()[0], "f2obo", 1);
  ASSERT_TRUE(c.CreateSession(create).ok());
  // What `f2obo-cli rebalance` would do to move key "kept" away: fence it,
  // then drop it here.  Both refused: the drop would delete the one copy.
  v1::SetFenceRequest fence;
  fence.set_routing_key("kept");
  fence.set_target("elsewhere");
  v1::Fence fenced;
  auto ctx = c.NewContext();
  grpc::Status s = c.stub().SetFence(ctx.get(), fence, &fenced);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_NE(s.error_message().find("moves no session"), std::string::npos) << s.error_message();
  v1::DropFencedSessionsRequest drop;
  drop.set_routing_key("kept");
  v1::DropFencedSessionsResponse dropped;
  ctx = c.NewContext();
  s = c.stub().DropFencedSessions(ctx.get(), drop, &dropped);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_TRUE(c.GetSession("kept").ok());
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_sessions WHERE id = 'kept'"), "1");
  EXPECT_EQ(Sql("SELECT count(*) FROM f2obo_fences"), "0");
}

TEST_F(PostgresServerTest, KillNineOfServerAndOfPostgresLosesAndRepeatsNoAcknowledgedStep) {
  testing::ScopedEnv env("PGPASSWORD", pg_->password());
  constexpr int kSteps = 240;
  const testing::FamilyCase f = testing::AllFamilyCases()[2];
  const std::string algorithm = testing::AllAlgorithms()[0];
  v1::SessionSpec spec = testing::SpecFor(f, algorithm, 5);
  spec.mutable_metrics()->set_exact_every(0);  // keeps the state deterministic
  const std::vector<std::string> flags = {"--store=" + Uri()};
  auto server = std::make_unique<ServerProcess>(flags);
  ASSERT_TRUE(server->started()) << server->Stderr();
  const std::string port = std::to_string(server->grpc_port());
  std::vector<std::string> restart = flags;
  restart.push_back("--listen=127.0.0.1:" + port);
  client::ClientOptions copt{server->target()};
  copt.max_attempts = 3;
  client::Client c(copt);
  v1::CreateSessionRequest create;
  create.set_session_id("pg-stream");
  *create.mutable_spec() = spec;
  ASSERT_TRUE(c.CreateSession(create).ok());

  int unavailable = 0, server_kills = 0, pg_kills = 0;
  int64_t next = 1;
  for (int acknowledged = 0; next <= kSteps;) {
    // Kills between the client's requests and, for PostgreSQL, while the
    // server holds the session: the next step meets a dead database.
    if (acknowledged == 60 || acknowledged == 180) {
      server->Stop(SIGKILL);
      server = std::make_unique<ServerProcess>(restart);
      ASSERT_TRUE(server->started()) << server->Stderr();
      ++server_kills;
      ++acknowledged;
    }
    if (acknowledged == 120) {
      ASSERT_TRUE(pg_->primary().Kill().ok());
      ++pg_kills;
      // While it is down, a step is refused UNAVAILABLE and nothing moves.
      absl::StatusOr<v1::StepReply> refused = c.Step(testing::RequestFor(f, "pg-stream", next));
      EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
      unavailable += !refused.ok();
      ASSERT_TRUE(pg_->primary().Start().ok());
      ++acknowledged;
    }
    absl::StatusOr<v1::StepReply> reply = c.Step(testing::RequestFor(f, "pg-stream", next));
    if (!reply.ok()) {
      absl::StatusOr<v1::SessionInfo> info = c.GetSession("pg-stream");
      ASSERT_TRUE(info.ok()) << info.status() << " after " << reply.status();
      ASSERT_TRUE(info->next_t() == next || info->next_t() == next + 1)
          << "lost or invented steps: next_t " << info->next_t() << " vs " << next;
      ASSERT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
      next = info->next_t();
      continue;
    }
    ASSERT_EQ(reply->t(), next);
    ++next;
    ++acknowledged;
  }
  EXPECT_EQ(server_kills, 2);
  EXPECT_EQ(pg_kills, 1);
  EXPECT_EQ(unavailable, 1);
  // A last restart: the state is what the database holds.
  server->Stop(SIGKILL);
  server = std::make_unique<ServerProcess>(restart);
  ASSERT_TRUE(server->started()) << server->Stderr();
  EXPECT_NE(server->Stderr().find("1 session(s) restored from the PostgreSQL store"),
            std::string::npos)
      << server->Stderr();
  client::Client fresh(client::ClientOptions{server->target()});
  // gRPC shares a connection to one address among channels; the first call
  // may still meet the killed server's socket (UNAVAILABLE), as a client's
  // first call after any restart may: retried, as clients do.
  absl::StatusOr<v1::SessionInfo> info = fresh.GetSession("pg-stream");
  for (int i = 0; i < 10 && absl::IsUnavailable(info.status()); ++i) {
    info = fresh.GetSession("pg-stream");
  }
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->next_t(), kSteps + 1);
  v1::ExportSessionRequest req;
  req.set_session_id("pg-stream");
  v1::SessionExport ex;
  auto ctx = fresh.NewContext();
  const grpc::Status exported = fresh.stub().ExportSession(ctx.get(), req, &ex);
  ASSERT_TRUE(exported.ok()) << exported.error_message() << "\n" << server->Stderr();
  absl::StatusOr<Checkpoint> state = DeserializeCheckpoint(ex.state());
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->state.t, kSteps + 1);
  absl::StatusOr<Checkpoint> expected = testing::CoreState(f, spec, kSteps);
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_TRUE(state->BitEquals(*expected)) << "differs from the uninterrupted run";
  EXPECT_EQ(Sql("SELECT next_t FROM f2obo_sessions WHERE id = 'pg-stream'"),
            std::to_string(kSteps + 1));
  EXPECT_EQ(server->Stderr().find(pg_->password()), std::string::npos);
}

}  // namespace
}  // namespace f2obo
