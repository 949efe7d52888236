// The PostgreSQL store's schema: tables f2obo_* with a version row
// (f2obo_schema), created in an empty database, migrated in place from an
// older version (one transaction, under an advisory lock that serializes
// servers opening one database at once), and a newer version refused before
// anything is written.
//
// Thread-safety: stateless; Open runs on the caller's connection.
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_SCHEMA_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_SCHEMA_H_

#include <cstdint>

#include "absl/status/status.h"
#include "server/store/postgres/pg_conn.h"

namespace f2obo::server::pg {

class Schema {
 public:
  // 1: sessions, state parts, replies, checkpoints (whole or in parts),
  //    groups, fences.
  // 2: write versions (f2obo_sessions.gen, sequence f2obo_gen).
  static constexpr int kVersion = 2;

  // Creates the schema in a database that has none, or brings an older one
  // to kVersion, on `c` (a connection not in a transaction).
  // FAILED_PRECONDITION if the database holds a newer version or a version
  // table without a version (nothing written); the database's errors
  // otherwise (nothing written either: one transaction).
  static absl::Status Open(Conn& c);

 private:
  // Brings a database at schema `version` (>= 1) to kVersion, in the
  // caller's transaction.
  static absl::Status Migrate(Conn& c, int64_t version);
};

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_SCHEMA_H_
