// The test PostgreSQL itself (pg_cluster.h): what the store's tests rely on
// holds — durability on, real passwords, a kill -9 that loses no commit,
// and a synchronous standby that has every acknowledged commit when the
// primary dies and is found through a multi-host URI once promoted.
#include "tests/server/store/postgres/pg_cluster.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <string>

namespace f2obo::testing {
namespace {

// The value of `sql` over a libpq connection to `uri`, or the error.
std::string QueryUri(const std::string& uri, const std::string& sql) {
  PGconn* conn = PQconnectdb(uri.c_str());
  std::string out;
  if (PQstatus(conn) != CONNECTION_OK) {
    out = std::string("error: ") + PQerrorMessage(conn);
  } else {
    PGresult* r = PQexec(conn, sql.c_str());
    out = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0
              ? PQgetvalue(r, 0, 0)
              : std::string("error: ") + PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(conn);
  return out;
}

TEST(PgClusterTest, RunsWithFsyncOnAndChecksPasswords) {
  absl::StatusOr<std::unique_ptr<PgCluster>> c = PgCluster::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  PgCluster& pg = **c;
  EXPECT_EQ(QueryUri(pg.Uri(pg.primary()), "SHOW fsync"), "on");
  EXPECT_EQ(QueryUri(pg.Uri(pg.primary()), "SHOW synchronous_commit"), "on");
  EXPECT_EQ(QueryUri(pg.Uri(pg.primary()), "SELECT current_database()"), pg.database());
  const std::string wrong = "postgresql://" + pg.user() +
                            ":not-it@127.0.0.1:" + std::to_string(pg.primary().port()) + "/" +
                            pg.database();
  EXPECT_NE(QueryUri(wrong, "SELECT 1").find("password authentication failed"), std::string::npos);
}

TEST(PgClusterTest, KillNineLosesNoCommittedRow) {
  absl::StatusOr<std::unique_ptr<PgCluster>> c = PgCluster::Start();
  ASSERT_TRUE(c.ok()) << c.status();
  PgCluster& pg = **c;
  ASSERT_TRUE(pg.Query(pg.primary(), "CREATE TABLE t (v int)").ok());
  ASSERT_TRUE(pg.Query(pg.primary(), "INSERT INTO t SELECT generate_series(1, 1000)").ok());
  const pid_t before = pg.primary().pid();
  ASSERT_TRUE(pg.primary().Kill().ok());
  EXPECT_EQ(kill(before, 0), -1) << "the postmaster survived kill -9";
  EXPECT_EQ(QueryUri(pg.Uri(pg.primary()), "SELECT 1").rfind("error", 0), 0u) << "still answers";
  ASSERT_TRUE(pg.primary().Start().ok());
  EXPECT_EQ(QueryUri(pg.Uri(pg.primary()), "SELECT count(*) FROM t"), "1000");
}

TEST(PgClusterTest, SyncStandbyHasEveryCommitAndIsFoundOncePromoted) {
  absl::StatusOr<std::unique_ptr<PgCluster>> c = PgCluster::Start(/*sync_standby=*/true);
  ASSERT_TRUE(c.ok()) << c.status();
  PgCluster& pg = **c;
  EXPECT_EQ(QueryUri(pg.Uri(pg.standby()), "SELECT pg_is_in_recovery()"), "t");
  // Through the multi-host URI: the primary (the standby is read-only).
  const std::string uri = pg.MultiHostUri();
  EXPECT_EQ(QueryUri(uri, "SELECT inet_server_port()"), std::to_string(pg.primary().port()));
  ASSERT_TRUE(pg.Query(pg.primary(), "CREATE TABLE t (v int)").ok());
  // Each INSERT is acknowledged only once the standby flushed it.
  for (int i = 1; i <= 50; ++i) {
    ASSERT_TRUE(pg.Query(pg.primary(), "INSERT INTO t VALUES (" + std::to_string(i) + ")").ok());
  }
  ASSERT_TRUE(pg.primary().Kill().ok());
  ASSERT_TRUE(pg.standby().Promote().ok());
  EXPECT_EQ(QueryUri(uri, "SELECT inet_server_port()"), std::to_string(pg.standby().port()));
  EXPECT_EQ(QueryUri(uri, "SELECT count(*) FROM t"), "50");
}

}  // namespace
}  // namespace f2obo::testing
