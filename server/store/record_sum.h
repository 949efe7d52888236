// Checksums of the store's records (server/store/session_store.cc): what
// each stored blob is verified against when it is loaded.
#ifndef F2OBO_SERVER_STORE_RECORD_SUM_H_
#define F2OBO_SERVER_STORE_RECORD_SUM_H_

#include <sqlite3.h>

#include <cstdint>

#include "absl/strings/string_view.h"

namespace f2obo::server::store_detail {

// The checksum of one stored blob: 64-bit FNV-1a over a tag naming the
// column, the record's id, its step index and the blob's bytes, so a blob
// moved to another row, another session or another step fails it too.
// FNV-1a detects every single-byte change (each step is a bijection of the
// hash state).  Stored as SQLite's signed 64-bit INTEGER.
int64_t RecordSum(absl::string_view tag, absl::string_view id, int64_t t,
                  absl::string_view blob);

// f2obo_sum(tag, id, t, blob): RecordSum as an SQL function, for migrating
// existing rows inside one UPDATE.
void SqlRecordSum(sqlite3_context* ctx, int argc, sqlite3_value** argv);

}  // namespace f2obo::server::store_detail

#endif  // F2OBO_SERVER_STORE_RECORD_SUM_H_
