#include "tests/server/store/legacy_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include "server/store/record_sum.h"

namespace f2obo::testing {

void RewriteWithFnvSums(const std::string& db_path, int version, const std::string& extra_sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_create_function_v2(db, "fnv", 4, SQLITE_UTF8, nullptr,
                             server::store_detail::SqlRecordSumFnv, nullptr, nullptr, nullptr);
  const std::string sql =
      "UPDATE sessions SET spec_sum = fnv('spec', id, 0, spec), "
      "state_sum = fnv('state', id, t, state);"
      "UPDATE replies SET reply_sum = fnv('reply', id, t, reply);"
      "UPDATE groups SET members_sum = fnv('group', id, 0, members);"
      "UPDATE checkpoints SET state_sum = fnv('checkpoint', id, t, state);"
      "UPDATE fences SET target_sum = fnv('fence', key, 0, target);" +
      extra_sql + ";PRAGMA user_version = " + std::to_string(version) + ";";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

}  // namespace f2obo::testing
