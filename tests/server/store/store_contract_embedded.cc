// The store contract (store_contract.h) on the embedded SQLite store, each
// test in a temporary data directory of its own.
#include <filesystem>
#include <memory>
#include <string>

#include "server/store/sqlite_session_store.h"
#include "tests/server/server_process.h"
#include "tests/server/store/store_contract.h"

namespace f2obo::server {
namespace {

class EmbeddedStore : public StoreUnderTest {
 public:
  ~EmbeddedStore() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  absl::StatusOr<std::unique_ptr<SessionStore>> Open(Durability durability) override {
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> store =
        SqliteSessionStore::Open(dir_, durability);
    if (!store.ok()) return store.status();
    return std::unique_ptr<SessionStore>(*std::move(store));
  }

 private:
  const std::string dir_ = testing::MakeTempDir();
};

StoreKind EmbeddedStoreKind() {
  return {"embedded", [] { return std::make_unique<EmbeddedStore>(); }};
}

INSTANTIATE_TEST_SUITE_P(Embedded, StoreContractTest, ::testing::Values(EmbeddedStoreKind()),
                         StoreKindName);

}  // namespace
}  // namespace f2obo::server
