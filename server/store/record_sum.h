// Checksums of the store's records (server/store/sqlite_session_store.cc): what
// each stored blob is verified against when it is loaded.
#ifndef F2OBO_SERVER_STORE_RECORD_SUM_H_
#define F2OBO_SERVER_STORE_RECORD_SUM_H_

#include <sqlite3.h>

#include <cstdint>

#include "absl/strings/string_view.h"

namespace f2obo::server::store_detail {

// The checksum of one stored blob (schema version 4 on): WordHash
// (core/word_hash.h) of the blob, seeded with the WordHash of a header
// naming the column (tag), the record's id and its step index
// (length-prefixed, so no two splits hash alike): a blob moved to another
// row, another session or another step fails it too.  Every change within
// one 8-byte word of the blob, hence every single-byte change, is
// detected.  Stored as SQLite's signed 64-bit INTEGER.
int64_t RecordSum(absl::string_view tag, absl::string_view id, int64_t t, absl::string_view blob);

// The checksum of schema versions 1-3: 64-bit FNV-1a over the same fields,
// byte by byte (~4 cycles a byte: it cost more than small rounds).  Only
// the migration to version 4 uses it, to verify rows before re-summing them.
int64_t RecordSumFnv(absl::string_view tag, absl::string_view id, int64_t t,
                     absl::string_view blob);

// f2obo_sum(tag, id, t, blob) and f2obo_sum_fnv(...): RecordSum and
// RecordSumFnv as SQL functions, for migrating existing rows inside one
// UPDATE.
void SqlRecordSum(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void SqlRecordSumFnv(sqlite3_context* ctx, int argc, sqlite3_value** argv);

}  // namespace f2obo::server::store_detail

#endif  // F2OBO_SERVER_STORE_RECORD_SUM_H_
