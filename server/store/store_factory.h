// Which session store a server uses, chosen from its flags: the embedded
// SQLite store in --data_dir (the default), a shared database named by
// --store, or none (sessions in memory only).
#ifndef F2OBO_SERVER_STORE_STORE_FACTORY_H_
#define F2OBO_SERVER_STORE_STORE_FACTORY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/store/session_store.h"

namespace f2obo::server {

struct StoreConfig {
  // --store: a database URI (postgresql://USER@HOST:PORT/DB), or "" for the
  // embedded store in data_dir.  It may hold a password: never logged, and
  // no error message repeats it.
  std::string uri;
  std::string data_dir;  // --data_dir; "" with no uri: no store
  Durability durability = Durability::kSync;
  int64_t max_store_bytes = 0;  // --max_store_bytes (0: no cap)
};

// The store `config` names, opened and capped; nullptr (OK) when it names
// none.  Errors name the flag at fault.
absl::StatusOr<std::unique_ptr<SessionStore>> OpenSessionStore(const StoreConfig& config);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_STORE_FACTORY_H_
