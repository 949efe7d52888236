// The store's checkpoints: earlier states of a session, for RollbackSession
// and ForkSession (server/session_manager.h says when they are taken).
//
// Table checkpoints (id, t, state, state_sum), t being the state's next
// step index as in the sessions table.  A checkpoint is written in the same
// transaction as the step (or the creation) whose state it keeps, so it is
// exactly as durable as that step; its checksum binds its bytes to its
// session and its t, verified when it is read.  Each session keeps its
// newest `keep` checkpoints; a rollback removes those after its target (a
// branch of history abandoned), a deletion all of them.
#include <fcntl.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/store/record_sum.h"
#include "server/store/session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_errors.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::BindRecord;
using store_detail::RecordSum;
using store_detail::Stmt;

absl::Status SessionStore::PutCheckpoint(const std::string& id, int64_t t, std::string state,
                                         int keep) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kCheckpoint;
  w->id = id;
  w->t = t;
  w->state = std::move(state);
  w->keep_checkpoints = std::max(keep, 1);
  return Submit(std::move(w), /*wait=*/true);
}

absl::Status SessionStore::RollbackSession(const std::string& id, int64_t t, std::string state,
                                           const std::vector<v1::StepReply>& replies) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kRollback;
  w->id = id;
  w->t = t;
  w->state = std::move(state);
  for (const v1::StepReply& r : replies) w->replies.emplace_back(r.t(), r.SerializeAsString());
  return Submit(std::move(w), /*wait=*/true);
}

namespace {

absl::Status Damaged(const std::string& id, int64_t t, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("the checkpoint of session '", id, "' at t = ", t - 1,
                                          " is damaged (", what, "); use another checkpoint"));
}

}  // namespace

absl::StatusOr<std::string> SessionStore::LoadCheckpoint(const std::string& id, int64_t t) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kLoadCheckpoint;
  w->id = id;
  w->t = t;
  if (absl::Status s = Submit(w, /*wait=*/true); !s.ok()) return s;
  if (w->loaded_fd < 0) return std::move(w->loaded);
  // In a side file: read here, not on the writer thread (it may be large).
  absl::StatusOr<std::string> bytes = ReadSideFileFd(w->loaded_fd, w->loaded_file.name);
  if (!bytes.ok()) return Damaged(id, t, bytes.status().message());
  if (RecordSum("checkpoint", id, t, *bytes) != w->loaded_file.sum) {
    return Damaged(id, t, "checksum mismatch: corrupt record");
  }
  return bytes;
}

void SessionStore::ReadCheckpoint(const Write& w) {
  Stmt row(db_, "SELECT state, state_sum, file FROM checkpoints WHERE id = ? AND t = ?");
  if (!row.ok()) {
    w.loaded = row.Error("reading a checkpoint");
    return;
  }
  const int rc = row.Text(1, w.id).Int(2, w.t).Step();
  if (rc == SQLITE_DONE) {
    w.loaded = absl::NotFoundError(
        absl::StrCat("session '", w.id, "' has no checkpoint at next step index ", w.t));
    return;
  }
  if (rc != SQLITE_ROW) {
    w.loaded = row.Error("reading a checkpoint");
    return;
  }
  if (row.IsNull(1)) {
    w.loaded = Damaged(w.id, w.t, "checksum missing: corrupt record");
    return;
  }
  if (!row.IsNull(2)) {
    // Opened now, so that a later write releasing the file cannot take it
    // from the caller, who reads it.
    w.loaded_file = {row.Column(2), row.ColumnInt(1)};
    w.loaded_fd = openat(records_fd_, w.loaded_file.name.c_str(), O_RDONLY | O_CLOEXEC);
    if (w.loaded_fd < 0) {
      w.loaded = Damaged(w.id, w.t,
                         absl::StrCat("side file records/", w.loaded_file.name,
                                      " unreadable: ", std::strerror(errno)));
    }
    return;
  }
  std::string state = row.Column(0);
  if (row.ColumnInt(1) != RecordSum("checkpoint", w.id, w.t, state)) {
    w.loaded = Damaged(w.id, w.t, "checksum mismatch: corrupt record");
    return;
  }
  w.loaded = std::move(state);
}

absl::Status SessionStore::InsertCheckpoint(const std::string& id, int64_t t,
                                            const std::string& state, const SideFile& file,
                                            int keep) {
  Stmt put(db_,
           "INSERT OR REPLACE INTO checkpoints (id, t, state, state_sum, file) "
           "VALUES (?, ?, ?, ?, ?)");
  put.Text(1, id).Int(2, t);
  BindRecord(put, 3, 4, 5, state, file, "checkpoint", id, t);
  if (absl::Status s = put.Run("saving a checkpoint"); !s.ok()) return s;
  Stmt trim(db_,
            "DELETE FROM checkpoints WHERE id = ?1 AND t NOT IN "
            "(SELECT t FROM checkpoints WHERE id = ?1 ORDER BY t DESC LIMIT ?2)");
  return trim.Text(1, id).Int(2, keep).Run("trimming checkpoints");
}

absl::Status SessionStore::ApplyRollback(const Write& w) {
  // The whole state in the row (parts NULL), as PutSession writes it.
  Stmt a(
      db_,
      "UPDATE sessions SET state = ?, t = ?, state_sum = ?, parts = NULL, file = ? WHERE id = ?");
  a.Int(2, w.t).Text(5, w.id);
  BindRecord(a, 1, 3, 4, w.state, w.state_file, "state", w.id, w.t);
  if (absl::Status s = a.Run("rolling back a session"); !s.ok()) return s;
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrCat("store: session '", w.id, "' not stored"));
  }
  if (absl::Status s = DropParts(w.id, 0); !s.ok()) return s;
  if (absl::Status s = ReplaceReplies(w.id, w.replies); !s.ok()) return s;
  Stmt drop(db_, "DELETE FROM checkpoints WHERE id = ? AND t > ?");
  return drop.Text(1, w.id).Int(2, w.t).Run("dropping later checkpoints");
}

}  // namespace f2obo::server
