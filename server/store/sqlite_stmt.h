// A RAII prepared SQLite statement with chained binds, for the store.
#ifndef F2OBO_SERVER_STORE_SQLITE_STMT_H_
#define F2OBO_SERVER_STORE_SQLITE_STMT_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace f2obo::server::store_detail {

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Blob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  std::string Column(int i) const {
    const void* p = sqlite3_column_blob(stmt_, i);
    return std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }
  int64_t ColumnInt(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool IsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  absl::Status Error(const char* what) const {
    return absl::InternalError(absl::StrCat("store: ", what, ": ", sqlite3_errmsg(db_)));
  }
  absl::Status Run(const char* what) {
    if (!ok()) return Error(what);
    const int rc = Step();
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? absl::OkStatus() : Error(what);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

}  // namespace f2obo::server::store_detail

#endif  // F2OBO_SERVER_STORE_SQLITE_STMT_H_
