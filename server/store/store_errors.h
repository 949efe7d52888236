// What a store failure answers, the same way on every RPC that writes
// (CreateSession, ImportSession, Step(s), DeleteSession, CheckpointSession,
// RollbackSession, ForkSession, the group RPCs),
// as documented in f2obo.proto's conventions:
//   RESOURCE_EXHAUSTED  the store is full (disk full, --max_store_bytes) or
//                       a record exceeds the store's maximum record size;
//   UNAVAILABLE         the store cannot be written now (an I/O error, a
//                       read-only or locked file, shutting down): retry;
//   ALREADY_EXISTS      a shared store's creation of an id another server
//                       stored first;
//   INTERNAL            anything else (a bug or a damaged file).
// Nothing the failed write was for has changed in either case.
#ifndef F2OBO_SERVER_STORE_STORE_ERRORS_H_
#define F2OBO_SERVER_STORE_STORE_ERRORS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace f2obo::server {

// The status of a failed SQLite call (`rc`, primary or extended result
// code) while doing `what`; `detail` is SQLite's message.
absl::Status StoreError(int rc, absl::string_view what, absl::string_view detail);

// A store failure as an RPC's answer: the store's code if it is one of the
// documented ones, else INTERNAL; the message says what was not done
// ("step 5 not applied") and, for UNAVAILABLE, that a retry may succeed.
absl::Status StoreWriteFailed(const absl::Status& store, absl::string_view not_done);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_STORE_ERRORS_H_
