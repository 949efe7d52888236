// Large records in side files: one session's big write
// must not hold up the others'.
//
// The store has one SQLite connection and one writer thread (group commit,
// session_store.h), and SQLite admits one writer at a time.  A record of
// hundreds of megabytes written through it (a session of y_dim 6e7: ~1 GB
// of state, plus its first checkpoint) held that writer, and with it every
// other session's steps, for tens of seconds: the bytes went to the WAL,
// were copied again by the WAL checkpoint, and freeing them on delete meant
// walking every overflow page.  So a record of at least side_file_bytes
// (16 MiB by default) is not written into its row: the caller's own thread
// writes it to a file of its own, <dir>/records/<name> (and fsyncs it and
// the directory under kSync), before the write is queued, and the row keeps
// only the file's name and the checksum of its bytes (column `file`; the
// blob column is empty).  The writer's transaction is then as small as any
// step's, and the big write's time is its own caller's.
//
// We chose this over the two other ways to keep the writer free:
//  * chunking a big record into many small transactions interleaved with
//    the others' writes (the bytes still pass the single writer twice, WAL
//    then database, and a create of 1 GB still takes the writer ~50 s in
//    total; publishing the chunks all-or-nothing needs staging rows and a
//    collector for abandoned ones anyway);
//  * checkpointing the WAL from a second connection (removes one of the
//    copies, not the stall of writing the WAL itself, nor a delete's).
//
// All or nothing, also under kill -9: a side file is referenced only by the
// row written in the same transaction as the rest of its write, after the
// file is durable; until that commits it is an orphan.  A row's file is
// released when the row is deleted or replaced (temporary triggers report
// it while the transaction runs) and removed only once the transaction is
// durable, by the thread whose write released it.  Open removes every file
// no row names (a write cut short by a crash, a removal the crash
// prevented), so the directory holds exactly the files the rows name.
// Records are verified at load as before: the checksum covers the file's
// bytes, and a missing or short file fails it (DATA_LOSS, the session is
// reported and not loaded).
//
// A session's state and its first checkpoint hold the same bytes: the
// checkpoint's file is a hard link to the state's (one write, one set of
// blocks; each row owns its own name, so each is released on its own).
// --max_store_bytes counts the side files with the database file: a side
// file that would pass the cap is refused like a full disk.
#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/aux_part_bytes.h"
#include "server/fault_points.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_errors.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::CheckpointPartsRecord;
using store_detail::CheckpointPartSum;
using store_detail::CheckpointWrite;
using store_detail::GroupStepWrite;
using store_detail::PutGroupWrite;
using store_detail::PutSessionWrite;
using store_detail::RecordSum;
using store_detail::RollbackWrite;
using store_detail::StepWrite;
using store_detail::Stmt;

namespace {

// The tables whose rows may name a side file (column `file`).
constexpr const char* kFileTables[] = {"sessions", "checkpoints", "state_parts",
                                       "checkpoint_parts"};

absl::Status FileError(int err, absl::string_view what, const std::string& name) {
  const int rc = err == ENOSPC || err == EDQUOT                  ? SQLITE_FULL
                 : err == EROFS || err == EACCES || err == EPERM ? SQLITE_READONLY
                                                                 : SQLITE_IOERR;
  return StoreError(rc, what, absl::StrCat("records/", name, ": ", std::strerror(err)));
}

// Called by the triggers with a released row's file name (user data: the
// store's list of files released by the transaction in progress).
void FileReleased(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto* released = static_cast<std::vector<std::string>*>(sqlite3_user_data(ctx));
  const unsigned char* name = sqlite3_value_text(argv[0]);
  if (name != nullptr) released->emplace_back(reinterpret_cast<const char*>(name));
  sqlite3_result_null(ctx);
}

}  // namespace

absl::Status SqliteSessionStore::OpenSideFiles(const std::string& dir) {
  const std::string records = dir + "/records";
  if (mkdir(records.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("store: cannot create ", records, ": ", std::strerror(errno)));
  }
  records_fd_ = open(records.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (records_fd_ < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("store: cannot open ", records, ": ", std::strerror(errno)));
  }
  std::random_device random;
  name_prefix_ = absl::StrCat(absl::Hex((uint64_t{random()} << 32) | random(), absl::kZeroPad16));
  // Temporary (this connection's) triggers: a row deleted, replaced (REPLACE
  // deletes, hence recursive_triggers) or updated away from its file
  // releases it.
  sqlite3_create_function_v2(db_, "f2obo_file_released", 1, SQLITE_UTF8, &released_, FileReleased,
                             nullptr, nullptr, nullptr);
  if (absl::Status s = Exec("PRAGMA recursive_triggers = ON"); !s.ok()) return s;
  for (const char* table : kFileTables) {
    const std::string sql =
        absl::StrCat("CREATE TEMP TRIGGER ", table, "_file_deleted AFTER DELETE ON main.", table,
                     " WHEN OLD.file IS NOT NULL BEGIN SELECT f2obo_file_released(OLD.file); END; ",
                     "CREATE TEMP TRIGGER ", table, "_file_updated AFTER UPDATE ON main.", table,
                     " WHEN OLD.file IS NOT NULL AND OLD.file IS NOT NEW.file",
                     " BEGIN SELECT f2obo_file_released(OLD.file); END;");
    if (absl::Status s = Exec(sql.c_str()); !s.ok()) return s;
  }
  // The files the rows name; every other file is an orphan.  Each table's
  // rows with a file have a partial index, so that listing them reads that
  // index, not the table (a scan of every state and checkpoint part row,
  // most of the file, took a third of the start-up at 200,000 tasks).  An
  // index, not a schema change: a server of the same schema version that
  // does not know it keeps it up to date all the same.
  for (const char* table : kFileTables) {
    const std::string sql = absl::StrCat("CREATE INDEX IF NOT EXISTS ", table, "_files ON ", table,
                                         " (file) WHERE file IS NOT NULL");
    if (absl::Status s = Exec(sql.c_str()); !s.ok()) return s;
  }
  std::set<std::string> named;
  for (const char* table : kFileTables) {
    const std::string sql = absl::StrCat("SELECT file FROM ", table, " WHERE file IS NOT NULL");
    Stmt rows(db_, sql.c_str());
    if (!rows.ok()) return rows.Error("listing side files");
    int rc;
    while ((rc = rows.Step()) == SQLITE_ROW) named.insert(rows.Column(0));
    if (rc != SQLITE_DONE) return rows.Error("listing side files");
  }
  DIR* listing = fdopendir(dup(records_fd_));
  if (listing == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("store: cannot list ", records, ": ", std::strerror(errno)));
  }
  std::set<ino_t> counted;
  int64_t bytes = 0;
  while (const dirent* entry = readdir(listing)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    if (named.count(name) == 0) {
      unlinkat(records_fd_, name.c_str(), 0);  // an orphan (see the top)
      continue;
    }
    struct stat st;
    if (fstatat(records_fd_, name.c_str(), &st, 0) == 0 && counted.insert(st.st_ino).second) {
      bytes += st.st_size;
    }
  }
  closedir(listing);
  side_bytes_ = bytes;
  return absl::OkStatus();
}

absl::StatusOr<SqliteSessionStore::SideFile> SqliteSessionStore::WriteSideFile(
    absl::string_view bytes, int64_t sum, Write& owner) {
  const int64_t size = static_cast<int64_t>(bytes.size());
  if (size > max_record_bytes()) {
    return StoreError(SQLITE_TOOBIG, "saving a record",
                      absl::StrCat("a record exceeds the store's maximum record size of ",
                                   max_record_bytes(), " bytes (SQLite's SQLITE_MAX_LENGTH)"));
  }
  if (const int64_t cap = max_store_bytes_.load(); cap > 0) {
    struct stat st;
    const int64_t db = stat(path_.c_str(), &st) == 0 ? st.st_size : 0;
    if (db + side_bytes_.load() + size > cap) {
      return StoreError(SQLITE_FULL, "saving a record",
                        absl::StrCat("the store would pass its cap of ", cap,
                                     " bytes (--max_store_bytes): database or disk is full"));
    }
  }
  SideFile file;
  int fd = -1;
  do {
    file.name = absl::StrCat(name_prefix_, "-", next_file_++, ".rec");
    fd = openat(records_fd_, file.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EEXIST);
  if (fd < 0) return FileError(errno, "creating a side file", file.name);
  owner.new_files.push_back(file.name);  // removed if the write fails
  side_bytes_ += size;
  file.sum = sum;
  const bool sync = durability_ == Durability::kSync;
  // Flushed in slices under kSync, so that the page cache never holds much
  // of it unwritten: a small step's fsync meanwhile (the filesystem's
  // journal commit) then never waits for hundreds of megabytes.
  constexpr size_t kSlice = size_t{32} << 20;
  size_t done = 0, flushed = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, std::min(bytes.size() - done, kSlice));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      return FileError(err, "writing a side file", file.name);
    }
    done += static_cast<size_t>(n);
    if (sync && done - flushed >= kSlice) {
      if (fdatasync(fd) != 0) {
        const int err = errno;
        close(fd);
        return FileError(err, "writing a side file", file.name);
      }
      flushed = done;
    }
  }
  if (sync && fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return FileError(err, "writing a side file", file.name);
  }
  if (close(fd) != 0) return FileError(errno, "writing a side file", file.name);
  return file;
}

absl::StatusOr<SqliteSessionStore::SideFile> SqliteSessionStore::LinkSideFile(
    const std::string& name, int64_t sum, Write& owner) {
  SideFile file;
  file.sum = sum;
  for (;;) {
    file.name = absl::StrCat(name_prefix_, "-", next_file_++, ".rec");
    if (linkat(records_fd_, name.c_str(), records_fd_, file.name.c_str(), 0) == 0) break;
    if (errno != EEXIST) return FileError(errno, "linking a side file", file.name);
  }
  owner.new_files.push_back(file.name);
  return file;
}

absl::Status SqliteSessionStore::SpillLarge(Write& owner) {
  return std::visit(
      [&](auto& w) -> absl::Status {
        using W = std::decay_t<decltype(w)>;
        if constexpr (std::is_same_v<W, GroupStepWrite>) {
          for (StepWrite& step : w.steps) {
            if (absl::Status s = Spill(step, owner); !s.ok()) return s;
          }
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<W, PutGroupWrite>) {
          for (PutSessionWrite& session : w.sessions) {
            if (absl::Status s = Spill(session, owner); !s.ok()) return s;
          }
          return absl::OkStatus();
        } else if constexpr (std::is_same_v<W, PutSessionWrite> || std::is_same_v<W, StepWrite> ||
                             std::is_same_v<W, CheckpointWrite> ||
                             std::is_same_v<W, RollbackWrite>) {
          return Spill(w, owner);
        } else {
          return absl::OkStatus();  // no record of its own
        }
      },
      owner.op);
}

absl::Status SqliteSessionStore::SpillRecord(std::string& bytes, const char* kind,
                                             const std::string& id, int64_t key, Write& owner,
                                             SideFile* file) {
  if (bytes.size() < side_file_bytes_) return absl::OkStatus();
  absl::StatusOr<SideFile> f = WriteSideFile(bytes, RecordSum(kind, id, key, bytes), owner);
  if (!f.ok()) return f.status();
  std::string().swap(bytes);
  *file = *std::move(f);
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::SpillCheckpointRows(const std::string& id, int64_t t,
                                                     CheckpointPartsRecord& parts, Write& owner) {
  // Each part bound to its index.
  for (auto& [index, bytes] : parts.rows) {
    parts.row_files.emplace_back();
    if (bytes.size() < side_file_bytes_) continue;
    absl::StatusOr<SideFile> f =
        WriteSideFile(bytes, CheckpointPartSum(id, t, index, bytes), owner);
    if (!f.ok()) return f.status();
    std::string().swap(bytes);
    parts.row_files.back() = *std::move(f);
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::SpillState(const std::string& id, int64_t t, std::string& state,
                                            SideFile& state_file, SideFile* checkpoint_file,
                                            Write& owner) {
  if (state.size() < side_file_bytes_) return absl::OkStatus();
  // A state that is also the checkpoint (or a head that is also the
  // checkpoint's, in parts): the checkpoint's checksum first (the bytes
  // are dropped once written), its file a hard link.
  const int64_t checkpoint_sum =
      checkpoint_file != nullptr ? RecordSum("checkpoint", id, t, state) : 0;
  if (absl::Status s = SpillRecord(state, "state", id, t, owner, &state_file); !s.ok()) return s;
  if (checkpoint_file == nullptr) return absl::OkStatus();
  absl::StatusOr<SideFile> linked = LinkSideFile(state_file.name, checkpoint_sum, owner);
  if (!linked.ok()) return linked.status();
  *checkpoint_file = *std::move(linked);
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::Spill(PutSessionWrite& w, Write& owner) {
  if (w.part_source != nullptr) {
    // A new session's parts, read where they are: a large one to a file of
    // its own (its first checkpoint's row: a hard link).
    const StateParts& aux = w.part_source->aux;
    std::string scratch;
    for (size_t i = 0; i < aux.size(); ++i) {
      // An empty part has no row (SaveSourceParts), so no file either.
      if (aux[i].size() == 0 || 8 * static_cast<size_t>(aux[i].size()) < side_file_bytes_) {
        continue;
      }
      const int64_t index = static_cast<int64_t>(i);
      const absl::string_view bytes = AuxPartBytes(aux[i], &scratch);
      absl::StatusOr<SideFile> f =
          WriteSideFile(bytes, RecordSum("part", w.id, index, bytes), owner);
      if (!f.ok()) return f.status();
      w.part_files.emplace_back(index, *f);
      if (!w.checkpoint) continue;
      absl::StatusOr<SideFile> linked =
          LinkSideFile(f->name, CheckpointPartSum(w.id, w.t, index, bytes), owner);
      if (!linked.ok()) return linked.status();
      w.checkpoint_part_files.emplace_back(index, *std::move(linked));
    }
  }
  // Its first checkpoint's record is the state's (whole, or the head).
  return SpillState(w.id, w.t, w.state, w.state_file, w.checkpoint ? &w.checkpoint_file : nullptr,
                    owner);
}

absl::Status SqliteSessionStore::Spill(StepWrite& w, Write& owner) {
  const bool whole = w.aux_count < 0;
  for (auto& [index, bytes] : w.aux_rows) {
    w.aux_files.emplace_back();
    if (absl::Status s = SpillRecord(bytes, "part", w.id, index, owner, &w.aux_files.back());
        !s.ok()) {
      return s;
    }
  }
  if (w.keep_checkpoints > 0) {
    if (absl::Status s = SpillCheckpointRows(w.id, w.t, w.checkpoint_parts, owner); !s.ok()) {
      return s;
    }
  }
  if (!whole && w.keep_checkpoints > 0) {
    if (absl::Status s =
            SpillRecord(w.full_state, "checkpoint", w.id, w.t, owner, &w.checkpoint_file);
        !s.ok()) {
      return s;
    }
  }
  // The checkpoint's record is the state's when whole or in parts (its head).
  const bool link = (whole || w.checkpoint_parts.count >= 0) && w.keep_checkpoints > 0;
  return SpillState(w.id, w.t, w.state, w.state_file, link ? &w.checkpoint_file : nullptr, owner);
}

absl::Status SqliteSessionStore::Spill(CheckpointWrite& w, Write& owner) {
  if (absl::Status s = SpillCheckpointRows(w.id, w.t, w.parts, owner); !s.ok()) return s;
  return SpillRecord(w.state, "checkpoint", w.id, w.t, owner, &w.file);
}

absl::Status SqliteSessionStore::Spill(RollbackWrite& w, Write& owner) {
  return SpillRecord(w.state, "state", w.id, w.t, owner, &w.state_file);
}

absl::Status SqliteSessionStore::SyncSideFiles(const Write& owner) {
  if (owner.new_files.empty() || durability_ != Durability::kSync) return absl::OkStatus();
  // The files' names, before any row names them.
  if (fsync(records_fd_) != 0) return FileError(errno, "syncing the side files' directory", "");
  return absl::OkStatus();
}

void SqliteSessionStore::RemoveSideFiles(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    struct stat st;
    // A hard link's blocks are freed with its last name only.
    if (fstatat(records_fd_, name.c_str(), &st, 0) == 0 &&
        unlinkat(records_fd_, name.c_str(), 0) == 0 && st.st_nlink == 1) {
      side_bytes_ -= st.st_size;
    }
  }
}

void SqliteSessionStore::SettleSideFiles(const Write& w) {
  // Failed or withdrawn: the files made for it are named by no row.
  if (!w.status.ok()) {
    RemoveSideFiles(w.new_files);
    return;
  }
  // Done: the files its transaction released are named by no durable row.
  if (w.dead_files.empty()) return;
  FaultPoint("side_files_released", std::string(store_detail::KeyOf(w.op)))
      .IgnoreError();  // tests crash here
  RemoveSideFiles(w.dead_files);
}

std::vector<std::string> SqliteSessionStore::TakeReleasedFiles() {
  std::vector<std::string> out;
  out.swap(released_);
  return out;
}

absl::StatusOr<std::string> SqliteSessionStore::ReadSideFile(const std::string& name) const {
  const int fd = openat(records_fd_, name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::DataLossError(
        absl::StrCat("side file records/", name, " unreadable (", std::strerror(errno), ")"));
  }
  return ReadSideFileFd(fd, name);
}

absl::StatusOr<std::string> SqliteSessionStore::ReadSideFileFd(int fd, const std::string& name) {
  struct stat st;
  std::string bytes;
  if (fstat(fd, &st) == 0) bytes.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const int err = errno;
  close(fd);
  if (done != bytes.size()) {
    return absl::DataLossError(
        absl::StrCat("side file records/", name, " unreadable (", std::strerror(err), ")"));
  }
  return bytes;
}

}  // namespace f2obo::server
