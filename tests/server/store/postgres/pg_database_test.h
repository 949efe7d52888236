// A gtest fixture over a real PostgreSQL: one cluster per test suite (with
// a synchronous standby when kSyncStandby), a fresh database per test.
#ifndef F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_DATABASE_TEST_H_
#define F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_DATABASE_TEST_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo::testing {

template <bool kSyncStandby = false>
class PgDatabaseTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<PgCluster>> c = PgCluster::Start(kSyncStandby);
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
    db_ = "test_" + std::to_string(++n);
    ASSERT_TRUE(pg_->CreateDatabase(db_).ok());
  }

  inline static PgCluster* pg_ = nullptr;
  std::string db_;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_DATABASE_TEST_H_
