// SqliteSessionStore::Open and what it checks before the first load: the
// data-directory lock, the file's integrity and the schema version (with
// the migration of older files).
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"

namespace f2obo::server {

using store_detail::SqlRecordSum;
using store_detail::SqlRecordSumFnv;
using store_detail::Stmt;

absl::StatusOr<std::unique_ptr<SqliteSessionStore>> SqliteSessionStore::Open(
    const std::string& dir, Durability durability, size_t max_queued_bytes,
    size_t side_file_bytes) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("--data_dir: cannot create ", dir, ": ", std::strerror(errno)));
  }
  // One server per directory: two would each hold sessions the other
  // overwrites.  SQLite's own locks serialise transactions, not owners.
  const std::string lock_path = dir + "/LOCK";
  const int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--data_dir: cannot open ", lock_path, ": ", std::strerror(errno)));
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {};
    const ssize_t n = pread(lock_fd, holder, sizeof(holder) - 1, 0);
    close(lock_fd);
    if (err != EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat("--data_dir: cannot lock ", lock_path, ": ", std::strerror(err)));
    }
    std::string pid(holder, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return absl::FailedPreconditionError(
        absl::StrCat("--data_dir ", dir, " is already in use by another f2obo-server",
                     pid.empty() ? "" : absl::StrCat(" (pid ", pid, ")"), ", which holds ",
                     lock_path, "; give each server its own --data_dir"));
  }
  // The holder's pid, for the message above only (the flock is the lock).
  if (ftruncate(lock_fd, 0) == 0) {
    const std::string pid = absl::StrCat(getpid(), "\n");
    const ssize_t written = pwrite(lock_fd, pid.data(), pid.size(), 0);
    (void)written;
  }
  const std::string path = dir + "/f2obo.sqlite3";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    close(lock_fd);
    return absl::FailedPreconditionError(absl::StrCat("store: cannot open ", path, ": ", msg));
  }
  // From here the store owns `db` and `lock_fd`.
  std::unique_ptr<SqliteSessionStore> store(
      new SqliteSessionStore(db, lock_fd, path, durability, max_queued_bytes, side_file_bytes));
  // Only outside readers (a backup, the sqlite3 shell) can hold the file
  // now; wait for them rather than fail a step.
  sqlite3_busy_timeout(db, 5000);
  sqlite3_create_function_v2(db, "f2obo_sum", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                             SqlRecordSum, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db, "f2obo_sum_fnv", 4, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                             SqlRecordSumFnv, nullptr, nullptr, nullptr);
  if (absl::Status s = store->CheckFile(dir); !s.ok()) return s;
  const char* setup[] = {
      "PRAGMA journal_mode=WAL",
      durability == Durability::kSync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF",
  };
  for (const char* sql : setup) {
    if (absl::Status s = store->Exec(sql); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": ", s.message()));
    }
  }
  if (absl::Status s = store->Migrate(); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("store ", path, ": ", s.message()));
  }
  if (absl::Status s = store->OpenSideFiles(dir); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("store ", path, ": ", s.message()));
  }
  store->writer_ = std::thread([s = store.get()] {
    // Named, so that profiles and /proc/<pid>/task tell its CPU apart.
    pthread_setname_np(pthread_self(), "f2obo-store");
    s->WriterLoop();
  });
  return store;
}

absl::Status SqliteSessionStore::CheckFile(const std::string& dir) {
  // Pages SQLite cannot read, or b-trees that do not hold together: starting
  // empty over them would hide every session, and writing into them may
  // spread the damage.  Refuse, and say what to do.
  //
  // What is checked: the schema and the free list (quick_check of
  // sqlite_schema: a damaged free list could hand a page in use to a new
  // row), and every table read at start with its indexes, i.e. all but the
  // checkpoints' part rows, which at 200,000 tasks are half the file and
  // which nothing reads before a rollback or fork: they are checked the
  // first time one reads a checkpoint in parts (ReadCheckpointParts), and a
  // damaged one is DATA_LOSS naming it.  Checking the whole file here took
  // 2x the time of the tables loaded (reload after kill -9 of a
  // 200,000-task session; bench/RESULTS.md, "Store").
  std::vector<std::string> problems;
  std::vector<std::string> tables = {"sqlite_schema"};
  {
    Stmt list(db_,
              "SELECT name FROM sqlite_schema WHERE type = 'table' AND name <> 'checkpoint_parts'");
    if (!list.ok()) {
      problems.push_back(sqlite3_errmsg(db_));
    } else {
      int rc;
      while ((rc = list.Step()) == SQLITE_ROW) tables.push_back(list.Column(0));
      if (rc != SQLITE_DONE) problems.push_back(sqlite3_errmsg(db_));
    }
  }
  for (size_t i = 0; problems.empty() && i < tables.size(); ++i) {
    const std::string sql = absl::StrCat("PRAGMA quick_check('", tables[i], "')");
    Stmt check(db_, sql.c_str());
    if (!check.ok()) {
      problems.push_back(sqlite3_errmsg(db_));
      break;
    }
    int rc;
    while ((rc = check.Step()) == SQLITE_ROW && problems.size() < 5) {
      std::string line = check.Column(0);
      if (line != "ok") problems.push_back(std::move(line));
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) problems.push_back(sqlite3_errmsg(db_));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "store ", path_, " is damaged (", absl::StrJoin(problems, "; "),
      "): refusing to start on it.  Move ", dir,
      " aside or restore it from a backup; `sqlite3 <file> .recover` may salvage the intact "
      "sessions (their checksums are verified when loaded)"));
}

absl::Status SqliteSessionStore::Migrate() {
  int version = -1;
  {
    Stmt v(db_, "PRAGMA user_version");
    if (!v.ok() || v.Step() != SQLITE_ROW) return v.Error("reading the schema version");
    version = static_cast<int>(v.ColumnInt(0));
  }
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "schema version ", version, " was written by a newer f2obo-server (this one knows up to ",
        kSchemaVersion, ")"));
  }
  if (version == kSchemaVersion) return absl::OkStatus();
  // Version 0 -> 1: a new file takes the same path (version 0 tables, then
  // the migrations), so every migration runs on every fresh store.  Rows
  // already there get their checksums from their bytes as they are; the
  // checks version 0 had (the state's own checksum, the protobuf parses)
  // still run at load, so no check is lost.
  const std::vector<const char*> to_1 = {
      "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, spec BLOB NOT NULL, "
      "state BLOB NOT NULL, t INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS replies (id TEXT NOT NULL, t INTEGER NOT NULL, "
      "reply BLOB NOT NULL, PRIMARY KEY (id, t))",
      "CREATE TABLE IF NOT EXISTS groups (id TEXT PRIMARY KEY, members TEXT NOT NULL)",
      "ALTER TABLE sessions ADD COLUMN spec_sum INTEGER",
      "ALTER TABLE sessions ADD COLUMN state_sum INTEGER",
      "ALTER TABLE replies ADD COLUMN reply_sum INTEGER",
      "ALTER TABLE groups ADD COLUMN members_sum INTEGER",
      "UPDATE sessions SET spec_sum = f2obo_sum('spec', id, 0, spec), "
      "state_sum = f2obo_sum('state', id, t, state)",
      "UPDATE replies SET reply_sum = f2obo_sum('reply', id, t, reply)",
      "UPDATE groups SET members_sum = f2obo_sum('group', id, 0, members)",
  };
  // Version 1 -> 2: checkpoints (server/store/checkpoints.cc).  Sessions
  // already stored start without any; they get one at their next multiple
  // of the checkpoint interval or on demand.
  const std::vector<const char*> to_2 = {
      "CREATE TABLE IF NOT EXISTS checkpoints (id TEXT NOT NULL, t INTEGER NOT NULL, "
      "state BLOB NOT NULL, state_sum INTEGER, PRIMARY KEY (id, t))",
  };
  // Version 2 -> 3: fences of routing keys being moved to another replica.
  const std::vector<const char*> to_3 = {
      "CREATE TABLE IF NOT EXISTS fences (key TEXT PRIMARY KEY, target TEXT NOT NULL, "
      "target_sum INTEGER)",
  };
  // Version 1-3 -> 4: checksums from WordHash instead of byte-wise FNV-1a
  // (record_sum.h).  Each row is verified against its old sum first: one
  // that fails it gets the complement of its new sum, so it still fails at
  // load (a missing sum stays missing).  Version 0 files get their sums in
  // to_1, already the new ones.
  std::vector<std::string> to_4;
  for (const char* column : {"sessions SET spec_sum|spec_sum|'spec', id, 0, spec",
                             "sessions SET state_sum|state_sum|'state', id, t, state",
                             "replies SET reply_sum|reply_sum|'reply', id, t, reply",
                             "groups SET members_sum|members_sum|'group', id, 0, members",
                             "checkpoints SET state_sum|state_sum|'checkpoint', id, t, state",
                             "fences SET target_sum|target_sum|'fence', key, 0, target"}) {
    const std::vector<std::string> p = absl::StrSplit(column, '|');
    to_4.push_back(absl::StrCat("UPDATE ", p[0], " = CASE WHEN ", p[1], " IS NULL THEN NULL WHEN ",
                                p[1], " = f2obo_sum_fnv(", p[2], ") THEN f2obo_sum(", p[2],
                                ") ELSE ~f2obo_sum(", p[2], ") END"));
  }
  // Version 4 -> 5: a session's state in parts (a step writes the aux
  // vectors it changed).  Rows already there keep their whole state (parts
  // NULL); a session's first step after loading writes all its parts.
  std::vector<const char*> to_5 = {
      "CREATE TABLE IF NOT EXISTS state_parts (id TEXT NOT NULL, idx INTEGER NOT NULL, "
      "part BLOB NOT NULL, part_sum INTEGER, PRIMARY KEY (id, idx)) WITHOUT ROWID",
  };
  // (A file whose table already has the column, e.g. one a test set back
  // to an older version, keeps it.)
  const auto has_column = [&](const char* table, const char* column) -> absl::StatusOr<bool> {
    const std::string sql = absl::StrCat("SELECT count(*) FROM pragma_table_info('", table,
                                         "') WHERE name = '", column, "'");
    Stmt count(db_, sql.c_str());
    if (!count.ok() || count.Step() != SQLITE_ROW) return count.Error("reading the schema");
    return count.ColumnInt(0) > 0;
  };
  {
    absl::StatusOr<bool> has = has_column("sessions", "parts");
    if (!has.ok()) return has.status();
    if (!*has) to_5.push_back("ALTER TABLE sessions ADD COLUMN parts INTEGER");
  }
  // Version 5 -> 6: large records in side files (side_files.cc): the
  // column naming a row's file, NULL for every row already there.
  std::vector<std::string> to_6;
  for (const char* table : {"sessions", "checkpoints", "state_parts"}) {
    absl::StatusOr<bool> has = has_column(table, "file");
    if (!has.ok()) return has.status();
    if (!*has) to_6.push_back(absl::StrCat("ALTER TABLE ", table, " ADD COLUMN file TEXT"));
  }
  // Version 6 -> 7: checkpoints in parts (checkpoints.cc).  Checkpoints
  // already there keep their whole encoding (parts NULL) and read as before.
  std::vector<std::string> to_7 = {
      "CREATE TABLE IF NOT EXISTS checkpoint_parts (id TEXT NOT NULL, t INTEGER NOT NULL, "
      "idx INTEGER NOT NULL, part BLOB NOT NULL, part_sum INTEGER, file TEXT, "
      "PRIMARY KEY (id, t, idx)) WITHOUT ROWID",
      "CREATE INDEX IF NOT EXISTS checkpoint_parts_by_index ON checkpoint_parts (id, idx, t)",
  };
  for (const char* column : {"parts", "since"}) {
    absl::StatusOr<bool> has = has_column("checkpoints", column);
    if (!has.ok()) return has.status();
    if (!*has)
      to_7.push_back(absl::StrCat("ALTER TABLE checkpoints ADD COLUMN ", column, " INTEGER"));
  }
  // One transaction: a crash mid-way leaves the file at its old version.
  std::vector<const char*> migrate = {"BEGIN IMMEDIATE"};
  if (version < 1) migrate.insert(migrate.end(), to_1.begin(), to_1.end());
  if (version < 2) migrate.insert(migrate.end(), to_2.begin(), to_2.end());
  if (version < 3) migrate.insert(migrate.end(), to_3.begin(), to_3.end());
  if (version >= 1 && version < 4) {
    for (const std::string& sql : to_4) migrate.push_back(sql.c_str());
  }
  if (version < 5) migrate.insert(migrate.end(), to_5.begin(), to_5.end());
  if (version < 6) {
    for (const std::string& sql : to_6) migrate.push_back(sql.c_str());
  }
  if (version < 7) {
    for (const std::string& sql : to_7) migrate.push_back(sql.c_str());
  }
  const std::string set_version = absl::StrCat("PRAGMA user_version = ", kSchemaVersion);
  migrate.push_back(set_version.c_str());
  migrate.push_back("COMMIT");
  for (const char* sql : migrate) {
    if (absl::Status s = Exec(sql); !s.ok()) {
      Exec("ROLLBACK").IgnoreError();
      return absl::Status(
          s.code(), absl::StrCat("migrating from schema version ", version, ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server
