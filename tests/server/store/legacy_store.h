// Stores as older servers wrote them, made from a current one (for the
// migration tests of server/store).
#ifndef F2OBO_TESTS_SERVER_STORE_LEGACY_STORE_H_
#define F2OBO_TESTS_SERVER_STORE_LEGACY_STORE_H_

#include <string>

namespace f2obo::testing {

// Rewrites the store file at `db_path` as schema version `version` (1-3)
// wrote it: every row's checksum recomputed with the FNV-1a record sum of
// those versions, then `extra_sql` (e.g. dropping a later table), then
// PRAGMA user_version = `version`.
void RewriteWithFnvSums(const std::string& db_path, int version, const std::string& extra_sql = "");

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_STORE_LEGACY_STORE_H_
