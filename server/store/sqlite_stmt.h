// A RAII prepared SQLite statement with chained binds, for the store.
#ifndef F2OBO_SERVER_STORE_SQLITE_STMT_H_
#define F2OBO_SERVER_STORE_SQLITE_STMT_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/store/store_errors.h"

namespace f2obo::server::store_detail {

// Statements prepared once per connection and reused, reset and rebound
// (Stmt's second constructor): preparing one (parsing, planning, code
// generation, the side-file triggers compiled in) cost the store's writer
// more CPU than running it, three or four times a step.  Keyed
// by the SQL's address, its text compared on every hit, so a string that
// reuses a freed one's address is never given the wrong statement; meant
// for string literals (a few dozen, each prepared once).  Not thread-safe:
// one thread uses it (the store's writer).  Clear() before sqlite3_close,
// which refuses to close over unfinalized statements.
class StmtCache {
 public:
  explicit StmtCache(sqlite3* db) : db_(db) {}
  StmtCache(const StmtCache&) = delete;
  StmtCache& operator=(const StmtCache&) = delete;
  ~StmtCache() { Clear(); }
  void Clear() {
    for (auto& [sql, e] : entries_) sqlite3_finalize(e.stmt);
    entries_.clear();
  }
  size_t size() const { return entries_.size(); }

 private:
  friend class Stmt;
  struct Entry {
    std::string sql;
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_;
  std::unordered_map<const char*, Entry> entries_;  // node-based: an Entry never moves
};

// A bind that fails (a blob beyond SQLITE_LIMIT_LENGTH: SQLITE_TOOBIG) is
// kept and reported by Run() instead of running the statement with that
// parameter NULL (which used to surface as "NOT NULL constraint failed").
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  // `sql` from `cache`, prepared there on first use and reset (not
  // finalized) when this is destroyed.  A statement already in use (the
  // same SQL nested) or whose text differs gets a statement of its own.
  Stmt(StmtCache& cache, const char* sql) : db_(cache.db_) {
    auto [it, fresh] = cache.entries_.try_emplace(sql);
    StmtCache::Entry& e = it->second;
    if (fresh) {
      e.sql = sql;
      if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &e.stmt, nullptr) !=
          SQLITE_OK) {
        sqlite3_finalize(e.stmt);
        cache.entries_.erase(it);  // prepared anew (and its error kept) below
        rc_ = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
        return;
      }
    }
    if (e.in_use || e.sql != sql) {
      rc_ = sqlite3_prepare_v2(db_, sql, -1, &stmt_, nullptr);
      return;
    }
    e.in_use = true;
    in_use_ = &e.in_use;
    stmt_ = e.stmt;
    rc_ = SQLITE_OK;
  }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() {
    if (in_use_ == nullptr) {
      sqlite3_finalize(stmt_);
      return;
    }
    // Reset: ends its read of the tables; unbound: no pointer into a
    // caller's string outlives the caller.
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    *in_use_ = false;
  }
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Text(int i, const std::string& v) {
    return Bound(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8));
  }
  Stmt& Blob(int i, const std::string& v) {
    return Bound(sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_STATIC));
  }
  // Bytes bound where they are (not copied): valid until the statement runs.
  Stmt& BlobView(int i, absl::string_view v) {
    return Bound(sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_STATIC));
  }
  Stmt& Int(int i, int64_t v) { return Bound(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& Null(int i) { return Bound(sqlite3_bind_null(stmt_, i)); }
  int Step() { return sqlite3_step(stmt_); }
  std::string Column(int i) const {
    const void* p = sqlite3_column_blob(stmt_, i);
    return std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }
  // Column i's bytes without a copy: valid until the next Step (or reset).
  absl::string_view ColumnView(int i) const {
    const void* p = sqlite3_column_blob(stmt_, i);
    return absl::string_view(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }
  int64_t ColumnInt(int i) const { return sqlite3_column_int64(stmt_, i); }
  bool IsNull(int i) const { return sqlite3_column_type(stmt_, i) == SQLITE_NULL; }
  absl::Status Error(const char* what) const {
    return StoreError(sqlite3_extended_errcode(db_), what, sqlite3_errmsg(db_));
  }
  absl::Status Run(const char* what) {
    if (!ok()) return Error(what);
    if (bind_rc_ != SQLITE_OK) {
      return StoreError(bind_rc_, what,
                        bind_rc_ == SQLITE_TOOBIG
                            ? absl::StrCat("a record exceeds the store's maximum record size of ",
                                           sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1),
                                           " bytes (SQLite's SQLITE_MAX_LENGTH)")
                            : std::string(sqlite3_errstr(bind_rc_)));
    }
    const int rc = Step();
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? absl::OkStatus() : Error(what);
  }

 private:
  Stmt& Bound(int rc) {
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  bool* in_use_ = nullptr;  // the cache's flag, when the statement is the cache's
  int rc_;
  int bind_rc_ = SQLITE_OK;  // the first failed bind's result code
};

}  // namespace f2obo::server::store_detail

#endif  // F2OBO_SERVER_STORE_SQLITE_STMT_H_
