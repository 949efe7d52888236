#include "server/store/store_errors.h"

#include <sqlite3.h>

#include "absl/strings/str_cat.h"

namespace f2obo::server {

absl::Status StoreError(int rc, absl::string_view what, absl::string_view detail) {
  const std::string message = absl::StrCat("store: ", what, ": ", detail);
  switch (rc & 0xff) {   // the primary result code
    case SQLITE_FULL:    // disk full, or the database at its max_page_count
    case SQLITE_TOOBIG:  // a blob beyond SQLITE_LIMIT_LENGTH
      return absl::ResourceExhaustedError(message);
    case SQLITE_IOERR:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_NOMEM:
    case SQLITE_PROTOCOL:
    case SQLITE_PERM:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status StoreWriteFailed(const absl::Status& store, absl::string_view not_done) {
  switch (store.code()) {
    case absl::StatusCode::kResourceExhausted:
      return absl::ResourceExhaustedError(
          absl::StrCat(not_done, ": the store has no room for it (", store.message(), ")"));
    case absl::StatusCode::kUnavailable:
      return absl::UnavailableError(absl::StrCat(not_done, ": the store could not be written (",
                                                 store.message(), "); retry"));
    case absl::StatusCode::kAborted:  // a shared store's compare-and-set
      return absl::UnavailableError(absl::StrCat(
          not_done, ": another server wrote the session meanwhile (", store.message(), "); retry"));
    case absl::StatusCode::kAlreadyExists:  // a shared store's insert-only creation
      return absl::AlreadyExistsError(absl::StrCat(not_done, ": ", store.message()));
    case absl::StatusCode::kNotFound:  // deleted meanwhile by another server
      return absl::NotFoundError(absl::StrCat(not_done, ": ", store.message()));
    default:
      return absl::InternalError(absl::StrCat(not_done, ": ", store.message()));
  }
}

}  // namespace f2obo::server
