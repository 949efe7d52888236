#include "server/store/store_factory.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/store/postgres/postgres_session_store.h"
#include "server/store/sqlite_session_store.h"

namespace f2obo::server {

absl::StatusOr<std::unique_ptr<SessionStore>> OpenSessionStore(const StoreConfig& config) {
  std::unique_ptr<SessionStore> store;
  if (!config.uri.empty()) {
    // The URI is not repeated: it may carry a password.
    if (!absl::StartsWith(config.uri, "postgresql://") &&
        !absl::StartsWith(config.uri, "postgres://")) {
      return absl::InvalidArgumentError(
          "--store: not a PostgreSQL URI (postgresql://USER@HOST:PORT/DB); leave it unset for "
          "the embedded store in --data_dir");
    }
    absl::StatusOr<std::unique_ptr<PostgresSessionStore>> opened =
        PostgresSessionStore::Open(config.uri, config.durability);
    if (!opened.ok()) {
      return absl::Status(opened.status().code(),
                          absl::StrCat("--store: ", opened.status().message()));
    }
    store = *std::move(opened);
  } else {
    if (config.data_dir.empty()) return store;
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> opened =
        SqliteSessionStore::Open(config.data_dir, config.durability);
    if (!opened.ok()) return opened.status();
    store = *std::move(opened);
  }
  if (absl::Status limited = store->LimitSize(config.max_store_bytes); !limited.ok()) {
    return absl::Status(limited.code(), absl::StrCat("--max_store_bytes: ", limited.message()));
  }
  return store;
}

}  // namespace f2obo::server
