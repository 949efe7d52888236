// The store's checkpoints: earlier states of a session, for RollbackSession
// and ForkSession (server/session_manager.h says when they are taken).
//
// Table checkpoints (id, t, state, state_sum, file, parts, since), t being
// the state's next step index as in the sessions table.  A checkpoint is
// written in the same transaction as the step (or the creation) whose state
// it keeps, so it is exactly as durable as that step; its checksum binds its
// bytes to its session and its t, verified when it is read.  Each session
// keeps its newest `keep` checkpoints; a rollback removes those after its
// target (a branch of history abandoned), a deletion all of them.
//
// Checkpoints in parts (schema version 7).  A multi-task
// session's state is mostly its tasks' blocks, and few of them change
// between two checkpoints; writing each checkpoint whole made the kept
// checkpoints most of the store (528 of 648 MB at 200,000 tasks) and a
// checkpointing step write the whole session.  So a checkpoint may be its
// head (column state, `parts` = the number of aux parts) plus, in table
// checkpoint_parts (id, t, idx, part), only the parts that changed since the
// previous checkpoint: part i of checkpoint C is the row of index i with the
// largest t in [since, C], where `since` is the checkpoint its chain starts
// from (one written with every non-empty part); a part that became empty
// has a row with empty bytes.  The writer says which checkpoint it extends
// (CheckpointParts::base); the store refuses it unless that is the newest
// one before it and in parts, so a chain never rests on a checkpoint the
// store does not hold (a failed write, a rollback, a restart: the manager
// then starts a new chain).  We chose this over referencing the session's
// current part rows by version: those are rewritten in place by every step,
// and a checkpoint must outlive them.
//
// Keeping only the newest `keep`: when the oldest kept checkpoint O is
// dropped, the next, N, becomes the oldest, and a part row older than N is
// still needed only if N resolves to it, i.e. N's own chain rows do not
// hold that index: so the rows with t < N whose index N holds are deleted
// (all rows before N when N starts its chain or is a whole encoding).  The
// work is the size of N's rows, what changed, not the session's size.
// Invariant: for every index at most one row is older than the oldest kept
// checkpoint.  Whole encodings (parts NULL: every checkpoint before version
// 7, a creation's first one before SessionRecord::parts, and those written
// by callers that give the whole state) are read as before.  A new
// session written in parts (create, import, fork) starts a chain with its
// first checkpoint.
#include <fcntl.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <tuple>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/state.h"
#include "server/fault_points.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_errors.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::BindRecord;
using store_detail::CheckpointPartsRecord;
using store_detail::CheckpointPartSum;
using store_detail::CheckpointRead;
using store_detail::CheckpointWrite;
using store_detail::RecordSum;
using store_detail::RollbackWrite;
using store_detail::Stmt;

absl::Status SqliteSessionStore::PutCheckpoint(const std::string& id, int64_t t, std::string state,
                                               int keep) {
  CheckpointWrite w;
  w.id = id;
  w.t = t;
  w.state = std::move(state);
  w.keep = std::max(keep, 1);
  return Submit(Queued(std::move(w)), /*wait=*/true);
}

absl::Status SqliteSessionStore::PutCheckpoint(const std::string& id, int64_t t,
                                               CheckpointParts parts, int keep) {
  CheckpointWrite w;
  w.id = id;
  w.t = t;
  w.state = std::move(parts.head);
  w.parts.count = parts.count;
  w.parts.base = parts.base;
  w.parts.rows = std::move(parts.rows);
  w.keep = std::max(keep, 1);
  return Submit(Queued(std::move(w)), /*wait=*/true);
}

absl::Status SqliteSessionStore::RollbackSession(const std::string& id, int64_t t,
                                                 std::string state,
                                                 const std::vector<v1::StepReply>& replies,
                                                 int64_t from_t) {
  RollbackWrite w;
  w.id = id;
  w.t = t;
  w.from_t = from_t;
  w.state = std::move(state);
  for (const v1::StepReply& r : replies) w.replies.emplace_back(r.t(), r.SerializeAsString());
  return Submit(Queued(std::move(w)), /*wait=*/true);
}

namespace {

absl::Status Damaged(const std::string& id, int64_t t, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("the checkpoint of session '", id, "' at t = ", t - 1,
                                          " is damaged (", what, "); use another checkpoint"));
}

}  // namespace

absl::StatusOr<std::string> SqliteSessionStore::LoadWholeCheckpoint(const std::string& id,
                                                                    int64_t t, bool* in_parts) {
  *in_parts = false;
  auto queued = Queued(CheckpointRead{id, t, std::string(), false, -1, {}});
  if (absl::Status s = Submit(queued, /*wait=*/true); !s.ok()) return s;
  CheckpointRead& read = std::get<CheckpointRead>(queued->op);
  // In parts: read by the caller, on a connection of this thread's own (the
  // writes queued before this read are committed; the caller holds the
  // session, so none of its own can follow while this reads).
  if (read.in_parts) {
    *in_parts = true;
    return std::string();
  }
  if (read.fd < 0) return std::move(read.loaded);
  // In a side file: read here, not on the writer thread (it may be large).
  absl::StatusOr<std::string> bytes = ReadSideFileFd(read.fd, read.file.name);
  if (!bytes.ok()) return Damaged(id, t, bytes.status().message());
  if (RecordSum("checkpoint", id, t, *bytes) != read.file.sum) {
    return Damaged(id, t, "checksum mismatch: corrupt record");
  }
  return bytes;
}

absl::StatusOr<std::string> SqliteSessionStore::LoadCheckpoint(const std::string& id, int64_t t) {
  bool in_parts = false;
  absl::StatusOr<std::string> bytes = LoadWholeCheckpoint(id, t, &in_parts);
  if (!in_parts) return bytes;
  absl::StatusOr<Checkpoint> joined = ReadCheckpointParts(id, t);
  if (!joined.ok()) return joined.status();
  return SerializeCheckpoint(*joined);
}

absl::StatusOr<Checkpoint> SqliteSessionStore::LoadCheckpointState(const std::string& id,
                                                                   int64_t t) {
  bool in_parts = false;
  absl::StatusOr<std::string> bytes = LoadWholeCheckpoint(id, t, &in_parts);
  // In parts: decoded part by part as it is read, never joined.
  if (in_parts) return ReadCheckpointParts(id, t);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<Checkpoint> decoded = DeserializeCheckpoint(*bytes);
  if (!decoded.ok()) return Damaged(id, t, decoded.status().message());
  return decoded;
}

absl::Status SqliteSessionStore::ApplyOp(CheckpointRead& w) {
  // Its own failure is in w.loaded, never the write's: always OK.
  Stmt row(*writer_sql_,
           "SELECT state, state_sum, file, parts FROM checkpoints WHERE id = ? AND t = ?");
  if (!row.ok()) {
    w.loaded = row.Error("reading a checkpoint");
    return absl::OkStatus();
  }
  const int rc = row.Text(1, w.id).Int(2, w.t).Step();
  if (rc == SQLITE_DONE) {
    w.loaded = absl::NotFoundError(
        absl::StrCat("session '", w.id, "' has no checkpoint at next step index ", w.t));
    return absl::OkStatus();
  }
  if (rc != SQLITE_ROW) {
    w.loaded = row.Error("reading a checkpoint");
    return absl::OkStatus();
  }
  if (!row.IsNull(3)) {
    w.in_parts = true;
    return absl::OkStatus();
  }
  if (row.IsNull(1)) {
    w.loaded = Damaged(w.id, w.t, "checksum missing: corrupt record");
    return absl::OkStatus();
  }
  if (!row.IsNull(2)) {
    // Opened now, so that a later write releasing the file cannot take it
    // from the caller, who reads it.
    w.file = {row.Column(2), row.ColumnInt(1)};
    w.fd = openat(records_fd_, w.file.name.c_str(), O_RDONLY | O_CLOEXEC);
    if (w.fd < 0) {
      w.loaded = Damaged(
          w.id, w.t,
          absl::StrCat("side file records/", w.file.name, " unreadable: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  std::string state = row.Column(0);
  if (row.ColumnInt(1) != RecordSum("checkpoint", w.id, w.t, state)) {
    w.loaded = Damaged(w.id, w.t, "checksum mismatch: corrupt record");
    return absl::OkStatus();
  }
  w.loaded = std::move(state);
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::ApplyOp(const CheckpointWrite& w) {
  return InsertCheckpoint(w.id, w.t, w.state, w.file, w.parts, w.keep);
}

absl::Status SqliteSessionStore::InsertCheckpoint(const std::string& id, int64_t t,
                                                  const std::string& head,
                                                  const SideFile& head_file,
                                                  const CheckpointPartsRecord& parts, int keep) {
  const bool in_parts = parts.count >= 0;
  int64_t since = t;  // a chain starts here, unless it extends one
  if (in_parts && parts.base > 0) {
    Stmt prev(*writer_sql_,
              "SELECT t, parts, since FROM checkpoints WHERE id = ? AND t < ? "
              "ORDER BY t DESC LIMIT 1");
    const int rc = prev.Text(1, id).Int(2, t).Step();
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return prev.Error("reading checkpoints");
    if (rc != SQLITE_ROW || prev.ColumnInt(0) != parts.base || prev.IsNull(1) || prev.IsNull(2)) {
      return absl::FailedPreconditionError(
          absl::StrCat("store: the checkpoint of session '", id, "' at t = ", t - 1,
                       " extends the one at t = ", parts.base - 1,
                       ", which is not its newest in parts; the next checkpoint is written whole"));
    }
    since = prev.ColumnInt(2);
  }
  // One replaced at the same t takes its parts with it.
  Stmt clear(*writer_sql_, "DELETE FROM checkpoint_parts WHERE id = ? AND t = ?");
  if (absl::Status s = clear.Text(1, id).Int(2, t).Run("replacing a checkpoint"); !s.ok()) {
    return s;
  }
  Stmt put(*writer_sql_,
           "INSERT OR REPLACE INTO checkpoints (id, t, state, state_sum, file, parts, since) "
           "VALUES (?, ?, ?, ?, ?, ?, ?)");
  put.Text(1, id).Int(2, t);
  BindRecord(put, 3, 4, 5, head, head_file, "checkpoint", id, t);
  if (in_parts) {
    put.Int(6, parts.count).Int(7, since);
  } else {
    put.Null(6).Null(7);
  }
  if (absl::Status s = put.Run("saving a checkpoint"); !s.ok()) return s;
  static const SideFile kInRow;
  static const std::string* const kEmpty = new std::string();
  for (size_t i = 0; in_parts && i < parts.rows.size(); ++i) {
    const auto& [index, bytes] = parts.rows[i];
    const SideFile& file = i < parts.row_files.size() ? parts.row_files[i] : kInRow;
    // A chain's first checkpoint needs no row for an empty part.
    if (since == t && bytes.empty() && file.name.empty()) continue;
    Stmt p(*writer_sql_,
           "INSERT INTO checkpoint_parts (id, t, idx, part, part_sum, file) "
           "VALUES (?, ?, ?, ?, ?, ?)");
    p.Text(1, id).Int(2, t).Int(3, index);
    if (file.name.empty()) {
      p.Blob(4, bytes).Int(5, CheckpointPartSum(id, t, index, bytes)).Null(6);
    } else {
      p.Blob(4, *kEmpty).Int(5, file.sum).Text(6, file.name);
    }
    if (absl::Status s = p.Run("saving a checkpoint part"); !s.ok()) return s;
  }
  if (absl::Status s = TrimCheckpoints(id, t, keep); !s.ok()) return s;
  // Tests fail or crash here, inside the transaction.
  if (in_parts && parts.base > 0) return FaultPoint("checkpoint_delta_written", id);
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::TrimCheckpoints(const std::string& id, int64_t written, int keep) {
  struct Kept {
    int64_t t;
    bool starts_chain;  // a whole encoding, or the first of a chain in parts
  };
  std::vector<Kept> kept;
  {
    Stmt list(*writer_sql_,
              "SELECT t, parts IS NULL OR since = t FROM checkpoints WHERE id = ? ORDER BY t");
    if (!list.ok()) return list.Error("listing checkpoints");
    list.Text(1, id);
    int rc;
    while ((rc = list.Step()) == SQLITE_ROW)
      kept.push_back({list.ColumnInt(0), list.ColumnInt(1) != 0});
    if (rc != SQLITE_DONE) return list.Error("listing checkpoints");
  }
  if (kept.empty()) return absl::OkStatus();
  const size_t drop = kept.size() > static_cast<size_t>(std::max(keep, 1))
                          ? kept.size() - static_cast<size_t>(std::max(keep, 1))
                          : 0;
  // The parts older than the oldest kept checkpoint N that N does not
  // resolve to (see the top), after each drop in turn; also when the
  // checkpoint just written is the oldest (the first, or a replaced one).
  const auto collect = [&](const Kept& n) -> absl::Status {
    if (n.starts_chain) {
      Stmt d(*writer_sql_, "DELETE FROM checkpoint_parts WHERE id = ? AND t < ?");
      return d.Text(1, id).Int(2, n.t).Run("dropping checkpoint parts");
    }
    Stmt d(*writer_sql_,
           "DELETE FROM checkpoint_parts WHERE id = ?1 AND idx IN "
           "(SELECT idx FROM checkpoint_parts WHERE id = ?1 AND t = ?2) AND t < ?2");
    return d.Text(1, id).Int(2, n.t).Run("dropping checkpoint parts");
  };
  for (size_t i = 0; i < drop; ++i) {
    Stmt d(*writer_sql_, "DELETE FROM checkpoints WHERE id = ? AND t = ?");
    if (absl::Status s = d.Text(1, id).Int(2, kept[i].t).Run("trimming checkpoints"); !s.ok()) {
      return s;
    }
    if (absl::Status s = collect(kept[i + 1]); !s.ok()) return s;
  }
  if (drop == 0 && kept[0].t == written) return collect(kept[0]);
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::DropCheckpoints(const std::string& id, int64_t after) {
  Stmt a(*writer_sql_, "DELETE FROM checkpoints WHERE id = ? AND t > ?");
  if (absl::Status s = a.Text(1, id).Int(2, after).Run("dropping checkpoints"); !s.ok()) return s;
  Stmt b(*writer_sql_, "DELETE FROM checkpoint_parts WHERE id = ? AND t > ?");
  return b.Text(1, id).Int(2, after).Run("dropping checkpoint parts");
}

absl::StatusOr<Checkpoint> SqliteSessionStore::ReadCheckpointParts(const std::string& id,
                                                                   int64_t t) const {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    const std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return StoreError(SQLITE_CANTOPEN, "reading a checkpoint", msg);
  }
  struct Closer {
    sqlite3* db;
    ~Closer() { sqlite3_close(db); }
  } closer{db};
  sqlite3_busy_timeout(db, 5000);
  // One read transaction: the head and its parts from one snapshot.
  Stmt begin(db, "BEGIN");
  if (absl::Status s = begin.Run("reading a checkpoint"); !s.ok()) return s;
  Stmt row(db,
           "SELECT state, state_sum, file, parts, since FROM checkpoints WHERE id = ? AND t = ?");
  const int rc = row.Text(1, id).Int(2, t).Step();
  if (rc == SQLITE_DONE) {
    return absl::NotFoundError(
        absl::StrCat("session '", id, "' has no checkpoint at next step index ", t));
  }
  if (rc != SQLITE_ROW) return row.Error("reading a checkpoint");
  if (row.IsNull(1) || row.IsNull(3) || row.IsNull(4)) {
    return Damaged(id, t, "checksum or parts missing: corrupt record");
  }
  std::string head = row.Column(0);
  if (!row.IsNull(2)) {
    absl::StatusOr<std::string> file = ReadSideFile(row.Column(2));
    if (!file.ok()) return Damaged(id, t, file.status().message());
    head = *std::move(file);
  }
  if (RecordSum("checkpoint", id, t, head) != row.ColumnInt(1)) {
    return Damaged(id, t, "checksum mismatch: corrupt record");
  }
  // A row lost from a damaged b-tree would go unnoticed below (the part
  // would resolve to an older row of its chain): the rows' structure first.
  if (std::string problem = CheckCheckpointParts(db); !problem.empty()) {
    return Damaged(id, t, problem);
  }
  const int64_t count = row.ColumnInt(3), since = row.ColumnInt(4);
  if (count < 0 || count > (int64_t{1} << 40)) return Damaged(id, t, "not a part count");
  absl::StatusOr<Checkpoint> joined = DeserializeCheckpointHead(head, static_cast<size_t>(count));
  if (!joined.ok()) return Damaged(id, t, joined.status().message());
  // Each index's newest row in [since, t]: the first of its rows here.
  Stmt parts(db,
             "SELECT idx, t, part, part_sum, file FROM checkpoint_parts "
             "WHERE id = ?1 AND t BETWEEN ?2 AND ?3 ORDER BY idx, t DESC");
  parts.Text(1, id).Int(2, since).Int(3, t);
  int64_t last = -1;
  int step;
  while ((step = parts.Step()) == SQLITE_ROW) {
    const int64_t index = parts.ColumnInt(0);
    if (index == last || index < 0 || index >= count) continue;
    last = index;
    const int64_t at = parts.ColumnInt(1);
    absl::string_view bytes = parts.ColumnView(2);
    absl::StatusOr<std::string> file;
    if (!parts.IsNull(4)) {
      file = ReadSideFile(parts.Column(4));
      if (!file.ok()) {
        return Damaged(id, t, absl::StrCat("part ", index, ": ", file.status().message()));
      }
      bytes = *file;
    }
    if (parts.IsNull(3) || parts.ColumnInt(3) != CheckpointPartSum(id, at, index, bytes)) {
      return Damaged(id, t, absl::StrCat("part ", index, ": checksum mismatch: corrupt record"));
    }
    if (absl::Status s = SetAuxPart(static_cast<size_t>(index), bytes, &*joined); !s.ok()) {
      return Damaged(id, t, s.message());
    }
  }
  if ((step & 0xff) == SQLITE_CORRUPT) {
    return Damaged(id, t, absl::StrCat("its part rows: ", sqlite3_errmsg(db)));
  }
  if (step != SQLITE_DONE) return parts.Error("reading a checkpoint");
  return joined;
}

std::string SqliteSessionStore::CheckCheckpointParts(sqlite3* db) const {
  absl::MutexLock lock(&parts_check_mu_);
  if (parts_check_.has_value()) return *parts_check_;
  std::vector<std::string> problems;
  Stmt check(db, "PRAGMA quick_check('checkpoint_parts')");
  int rc = check.ok() ? SQLITE_ROW : SQLITE_ERROR;
  while (check.ok() && problems.size() < 5 && (rc = check.Step()) == SQLITE_ROW) {
    std::string line = check.Column(0);
    if (line != "ok") problems.push_back(std::move(line));
  }
  if ((rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB) {
    problems.push_back(sqlite3_errmsg(db));  // a b-tree the check cannot walk
  } else if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    // Not a verdict (e.g. the file unreadable now): not remembered.
    return absl::StrCat("the store's checkpoint part rows could not be checked: ",
                        sqlite3_errmsg(db));
  }
  parts_check_ = problems.empty() ? std::string()
                                  : absl::StrCat("the store's checkpoint part rows are damaged: ",
                                                 absl::StrJoin(problems, "; "));
  if (!parts_check_->empty()) {
    std::fprintf(stderr, "f2obo-server: store %s: %s; no checkpoint in parts can be read\n",
                 path_.c_str(), parts_check_->c_str());
  }
  return *parts_check_;
}

absl::Status SqliteSessionStore::ApplyOp(const RollbackWrite& w) {
  // The whole state in the row (parts NULL), as PutSession writes it.
  Stmt a(
      *writer_sql_,
      "UPDATE sessions SET state = ?, t = ?, state_sum = ?, parts = NULL, file = ? WHERE id = ?");
  a.Int(2, w.t).Text(5, w.id);
  BindRecord(a, 1, 3, 4, w.state, w.state_file, "state", w.id, w.t);
  if (absl::Status s = a.Run("rolling back a session"); !s.ok()) return s;
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrCat("store: session '", w.id, "' not stored"));
  }
  if (absl::Status s = DropParts(w.id, 0); !s.ok()) return s;
  if (absl::Status s = ReplaceReplies(w.id, w.replies); !s.ok()) return s;
  return DropCheckpoints(w.id, w.t);
}

}  // namespace f2obo::server
