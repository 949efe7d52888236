// The store contract (store_contract.h) on the PostgreSQL store: one
// PostgreSQL for the binary (started at the first test), a database of
// its own for each test.
#include <memory>
#include <string>

#include "server/store/postgres/postgres_session_store.h"
#include "tests/server/store/postgres/pg_cluster.h"
#include "tests/server/store/store_contract.h"

namespace f2obo::server {
namespace {

testing::PgCluster* Cluster() {
  static testing::PgCluster* const cluster = [] {
    absl::StatusOr<std::unique_ptr<testing::PgCluster>> c = testing::PgCluster::Start();
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->release() : nullptr;
  }();
  return cluster;
}

class PostgresStore : public StoreUnderTest {
 public:
  PostgresStore() {
    static int n = 0;
    db_ = "contract_" + std::to_string(++n);
    if (Cluster() != nullptr) {
      absl::Status made = Cluster()->CreateDatabase(db_);
      EXPECT_TRUE(made.ok()) << made;
    }
  }
  absl::StatusOr<std::unique_ptr<SessionStore>> Open(Durability durability) override {
    if (Cluster() == nullptr) return absl::FailedPreconditionError("no PostgreSQL");
    absl::StatusOr<std::unique_ptr<PostgresSessionStore>> store =
        PostgresSessionStore::Open(Cluster()->UriOf(Cluster()->primary(), db_), durability);
    if (!store.ok()) return store.status();
    return std::unique_ptr<SessionStore>(*std::move(store));
  }

 private:
  std::string db_;
};

StoreKind PostgresStoreKind() {
  return {"postgres", [] { return std::make_unique<PostgresStore>(); }};
}

INSTANTIATE_TEST_SUITE_P(Postgres, StoreContractTest, ::testing::Values(PostgresStoreKind()),
                         StoreKindName);

// The cluster lives until the process exits; its servers die with it
// (PR_SET_PDEATHSIG) and this removes its directory.
class ClusterTeardown : public ::testing::Environment {
 public:
  void TearDown() override { delete Cluster(); }
};
[[maybe_unused]] ::testing::Environment* const kTeardown =
    ::testing::AddGlobalTestEnvironment(new ClusterTeardown);

}  // namespace
}  // namespace f2obo::server
