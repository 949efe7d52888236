#include "server/store/sqlite_session_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/state.h"
#include "server/fault_points.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_errors.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::BindRecord;
using store_detail::CheckpointPartsRecord;
using store_detail::CheckpointRead;
using store_detail::DeleteGroupWrite;
using store_detail::DeleteSessionWrite;
using store_detail::FenceWrite;
using store_detail::GroupStepWrite;
using store_detail::PutGroupWrite;
using store_detail::PutSessionWrite;
using store_detail::RecordSum;
using store_detail::StepWrite;
using store_detail::Stmt;

SqliteSessionStore::SqliteSessionStore(sqlite3* db, int lock_fd, std::string path,
                                       Durability durability, size_t max_queued_bytes,
                                       size_t side_file_bytes)
    : db_(db),
      writer_sql_(std::make_unique<store_detail::StmtCache>(db)),
      lock_fd_(lock_fd),
      path_(std::move(path)),
      durability_(durability),
      max_queued_bytes_(max_queued_bytes),
      side_file_bytes_(side_file_bytes) {}

SqliteSessionStore::~SqliteSessionStore() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_cv_.SignalAll();
  room_cv_.SignalAll();
  if (writer_.joinable()) writer_.join();  // drains the queue first
  writer_sql_->Clear();                    // sqlite3_close fails over unfinalized statements
  sqlite3_close(db_);
  if (records_fd_ >= 0) close(records_fd_);
  close(lock_fd_);  // last: the directory is free once the file is closed
}

int64_t SqliteSessionStore::unwaited_failures() const {
  absl::MutexLock lock(&mu_);
  return unwaited_failures_;
}

size_t SqliteSessionStore::max_queued_bytes_seen() const {
  absl::MutexLock lock(&mu_);
  return max_queued_bytes_seen_;
}

absl::Status SqliteSessionStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = StoreError(sqlite3_extended_errcode(db_), sql, err ? err : "?");
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::ExecCached(const char* sql) {
  Stmt s(*writer_sql_, sql);
  return s.Run(sql);
}

absl::Status SqliteSessionStore::PutGroup(const std::string& id,
                                          const std::vector<std::string>& members) {
  return Submit(Queued(PutGroupWrite{id, absl::StrJoin(members, "\n"), {}}), /*wait=*/true);
}

absl::Status SqliteSessionStore::DeleteGroup(const std::string& id,
                                             const std::vector<std::string>& members,
                                             Deadline deadline) {
  return Submit(Queued(DeleteGroupWrite{id, members}), /*wait=*/true, deadline);
}

PutSessionWrite SqliteSessionStore::MakePutWrite(SessionRecord r) {
  PutSessionWrite w;
  w.id = std::move(r.id);
  w.spec = r.spec.SerializeAsString();
  w.state = std::move(r.state);
  w.t = r.t;
  w.checkpoint = r.checkpoint;
  for (const v1::StepReply& reply : r.replies) {
    w.replies.emplace_back(reply.t(), reply.SerializeAsString());
  }
  w.part_source = std::move(r.parts);
  return w;
}

absl::Status SqliteSessionStore::PutSession(SessionRecord record, Deadline deadline) {
  return Submit(Queued(MakePutWrite(std::move(record))), /*wait=*/true, deadline);
}

absl::Status SqliteSessionStore::PutGroupWithSessions(const std::string& id,
                                                      const std::vector<SessionRecord>& members,
                                                      Deadline deadline) {
  PutGroupWrite group{id, "", {}};
  std::vector<std::string> ids;
  for (const SessionRecord& r : members) {
    group.sessions.push_back(MakePutWrite(r));  // in parts: copies the head and a handle only
    ids.push_back(r.id);
  }
  group.members = absl::StrJoin(ids, "\n");
  return Submit(Queued(std::move(group)), /*wait=*/true, deadline);
}

absl::Status SqliteSessionStore::DeleteSession(const std::string& id, Deadline deadline) {
  return Submit(Queued(DeleteSessionWrite{id}), /*wait=*/true, deadline);
}

absl::Status SqliteSessionStore::CommitStep(const std::string& id, int64_t t, std::string state,
                                            const v1::StepReply& reply, int keep_replies,
                                            int keep_checkpoints, Deadline deadline) {
  StepWrite w;
  w.id = id;
  w.t = t;
  w.from_t = t - 1;
  w.state = std::move(state);
  w.reply = reply.SerializeAsString();
  w.keep_replies = keep_replies;
  w.keep_checkpoints = keep_checkpoints;
  return Submit(Queued(std::move(w)), /*wait=*/durability_ == Durability::kSync, deadline);
}

absl::Status SqliteSessionStore::SaveReply(const StepWrite& w) {
  // The cache keeps the rows keyed in (w.t - keep_replies, w.t].  When it is full
  // and holds nothing older (the steady state), the oldest row becomes
  // this reply's: one statement, where an insert and a trim were two.
  // Otherwise (a new session, keep changed, a rollback's shorter cache)
  // the insert and the trim.
  const int64_t oldest = w.t - w.keep_replies;
  const int64_t sum = RecordSum("reply", w.id, w.t, w.reply);
  Stmt move(*writer_sql_,
            "UPDATE OR REPLACE replies SET t = ?3, reply = ?4, reply_sum = ?5 "
            "WHERE id = ?1 AND t = ?2 AND NOT EXISTS "
            "(SELECT 1 FROM replies WHERE id = ?1 AND t < ?2)");
  if (absl::Status s = move.Text(1, w.id)
                           .Int(2, oldest)
                           .Int(3, w.t)
                           .Blob(4, w.reply)
                           .Int(5, sum)
                           .Run("saving a reply");
      !s.ok()) {
    return s;
  }
  if (sqlite3_changes(db_) == 1) return absl::OkStatus();
  Stmt b(*writer_sql_,
         "INSERT OR REPLACE INTO replies (id, t, reply, reply_sum) VALUES (?, ?, ?, ?)");
  if (absl::Status s =
          b.Text(1, w.id).Int(2, w.t).Blob(3, w.reply).Int(4, sum).Run("saving a reply");
      !s.ok()) {
    return s;
  }
  Stmt c(*writer_sql_, "DELETE FROM replies WHERE id = ? AND t <= ?");
  return c.Text(1, w.id).Int(2, oldest).Run("trimming replies");
}

absl::Status SqliteSessionStore::ReplaceReplies(
    const std::string& id, const std::vector<std::pair<int64_t, std::string>>& replies) {
  Stmt clear(*writer_sql_, "DELETE FROM replies WHERE id = ?");
  if (absl::Status s = clear.Text(1, id).Run("clearing replies"); !s.ok()) return s;
  for (const auto& [step, reply] : replies) {
    const int64_t t = step + 1;
    Stmt r(*writer_sql_, "INSERT INTO replies (id, t, reply, reply_sum) VALUES (?, ?, ?, ?)");
    if (absl::Status s = r.Text(1, id)
                             .Int(2, t)
                             .Blob(3, reply)
                             .Int(4, RecordSum("reply", id, t, reply))
                             .Run("saving a reply");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::DeleteSessionRows(const std::string& id) {
  Stmt a(*writer_sql_, "DELETE FROM sessions WHERE id = ?");
  if (absl::Status s = a.Text(1, id).Run("deleting a session"); !s.ok()) return s;
  Stmt b(*writer_sql_, "DELETE FROM replies WHERE id = ?");
  if (absl::Status s = b.Text(1, id).Run("deleting replies"); !s.ok()) return s;
  if (absl::Status s = DropCheckpoints(id, std::numeric_limits<int64_t>::min()); !s.ok()) {
    return s;
  }
  return DropParts(id, 0);
}

absl::Status SqliteSessionStore::LimitSize(int64_t max_bytes) {
  max_store_bytes_ = std::max<int64_t>(max_bytes, 0);  // side files (side_files.cc)
  if (max_bytes <= 0) return absl::OkStatus();
  Stmt page(db_, "PRAGMA page_size");
  if (!page.ok() || page.Step() != SQLITE_ROW) return page.Error("reading the page size");
  const int64_t page_size = page.ColumnInt(0);
  // SQLite never lowers max_page_count below the file's current size.
  const std::string sql =
      absl::StrCat("PRAGMA max_page_count = ", std::max<int64_t>(1, max_bytes / page_size));
  Stmt limit(db_, sql.c_str());
  return limit.Run("limiting the store's size");
}

int64_t SqliteSessionStore::max_record_bytes() const {
  return sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, -1);
}

void SqliteSessionStore::LimitRecordBytesForTesting(int bytes) {
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, bytes);
}

absl::Status SqliteSessionStore::Apply(Write& w) {
  if (const int rc = fail_writes_rc_.load();
      rc != SQLITE_OK && !std::holds_alternative<CheckpointRead>(w.op)) {
    return StoreError(rc, "a write failed for a test", sqlite3_errstr(rc));
  }
  return std::visit([this](auto& op) { return ApplyOp(op); }, w.op);
}

absl::Status SqliteSessionStore::ApplyOp(const PutSessionWrite& w) {
  const int64_t aux_count = w.aux_count();
  const bool in_parts = aux_count >= 0;
  Stmt s(*writer_sql_,
         "INSERT OR REPLACE INTO sessions (id, spec, state, t, spec_sum, state_sum, file, "
         "parts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  s.Text(1, w.id).Blob(2, w.spec).Int(4, w.t).Int(5, RecordSum("spec", w.id, 0, w.spec));
  BindRecord(s, 3, 6, 7, w.state, w.state_file, "state", w.id, w.t);
  if (in_parts) {
    s.Int(8, aux_count);
  } else {
    s.Null(8);
  }
  if (absl::Status st = s.Run("saving a session"); !st.ok()) return st;
  // No part of an earlier session of this id may survive (whole: the
  // state is in the row, parts NULL).
  if (absl::Status st = DropParts(w.id, 0); !st.ok()) return st;
  if (absl::Status st = ReplaceReplies(w.id, w.replies); !st.ok()) return st;
  // A new session (create, import, fork): no checkpoint of an earlier
  // session of this id may survive, and its starting point is its first.
  if (absl::Status st = DropCheckpoints(w.id, std::numeric_limits<int64_t>::min()); !st.ok()) {
    return st;
  }
  if (w.checkpoint) {
    // In parts: a chain's start, its part rows written by SaveSourceParts.
    const CheckpointPartsRecord first{in_parts ? aux_count : -1, 0, {}, {}};
    if (absl::Status st = InsertCheckpoint(w.id, w.t, w.state, w.checkpoint_file, first, 1);
        !st.ok()) {
      return st;
    }
  }
  if (!in_parts) return absl::OkStatus();
  if (absl::Status st = SaveSourceParts(w); !st.ok()) return st;
  // Tests fail or crash here, inside the transaction.
  return FaultPoint("put_parts_written", w.id);
}

absl::Status SqliteSessionStore::ApplyOp(const StepWrite& w) {
  const bool in_parts = w.aux_count >= 0;
  // The checkpoint's record: the whole state, or in parts the head.
  const std::string& full = in_parts && w.checkpoint_parts.count < 0 ? w.full_state : w.state;
  const auto checkpoint = [&] {
    return InsertCheckpoint(w.id, w.t, full, w.checkpoint_file, w.checkpoint_parts,
                            w.keep_checkpoints);
  };
  if (in_parts && !w.complete_parts && NeedsCompleteState(w.id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("store: an earlier step of session '", w.id,
                     "' was not saved, so its parts are behind; its next step writes them all"));
  }
  // Parts first, in step order: a later step of the same session in this
  // transaction overwrites the parts both changed.
  if (in_parts) {
    if (absl::Status s = SaveParts(w); !s.ok()) return s;
    if (w.trim_parts) {
      if (absl::Status s = DropParts(w.id, w.aux_count); !s.ok()) return s;
    }
  }
  if (w.state_superseded) {
    // The same session's next step, later in this transaction, writes its
    // newer head (and checks the row exists); this head's side file, if
    // any, is named by no row.
    if (!w.state_file.name.empty()) released_.push_back(w.state_file.name);
    if (!w.reply_superseded) {
      if (absl::Status s = SaveReply(w); !s.ok()) return s;
    }
    return w.keep_checkpoints > 0 ? checkpoint() : absl::OkStatus();
  }
  Stmt a(*writer_sql_,
         "UPDATE sessions SET state = ?, t = ?, state_sum = ?, parts = ?, file = ? WHERE id = ?");
  a.Int(2, w.t);
  BindRecord(a, 1, 3, 5, w.state, w.state_file, "state", w.id, w.t);
  if (in_parts) {
    a.Int(4, w.aux_count);
  } else {
    a.Null(4);
  }
  if (absl::Status s = a.Text(6, w.id).Run("saving a step"); !s.ok()) return s;
  if (sqlite3_changes(db_) != 1) {
    return absl::NotFoundError(absl::StrCat("store: session '", w.id, "' not stored"));
  }
  if (!in_parts) {
    if (absl::Status s = DropParts(w.id, 0); !s.ok()) return s;
  }
  if (absl::Status s = SaveReply(w); !s.ok()) return s;
  return w.keep_checkpoints > 0 ? checkpoint() : absl::OkStatus();
}

absl::Status SqliteSessionStore::ApplyOp(const GroupStepWrite& w) {
  // One Write is applied inside one transaction (see WriterLoop).
  for (const StepWrite& step : w.steps) {
    if (absl::Status s = ApplyOp(step); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::ApplyOp(const PutGroupWrite& w) {
  // The sessions first, then the group naming them, in one transaction.
  for (const PutSessionWrite& session : w.sessions) {
    if (absl::Status s = ApplyOp(session); !s.ok()) return s;
  }
  Stmt g(*writer_sql_, "INSERT OR REPLACE INTO groups (id, members, members_sum) VALUES (?, ?, ?)");
  return g.Text(1, w.id)
      .Text(2, w.members)
      .Int(3, RecordSum("group", w.id, 0, w.members))
      .Run("saving a group");
}

absl::Status SqliteSessionStore::ApplyOp(const DeleteSessionWrite& w) {
  return DeleteSessionRows(w.id);
}

absl::Status SqliteSessionStore::ApplyOp(const DeleteGroupWrite& w) {
  // One Write is applied inside one transaction (see WriterLoop).
  for (const std::string& member : w.members) {
    if (member.empty()) continue;
    if (absl::Status s = DeleteSessionRows(member); !s.ok()) return s;
  }
  Stmt g(*writer_sql_, "DELETE FROM groups WHERE id = ?");
  if (absl::Status s = g.Text(1, w.id).Run("deleting a group"); !s.ok()) return s;
  // Tests crash here, inside the transaction.
  return FaultPoint("delete_group_written", w.id);
}

absl::Status SqliteSessionStore::ApplyOp(const FenceWrite& w) {
  if (w.target.empty()) {
    Stmt f(*writer_sql_, "DELETE FROM fences WHERE key = ?");
    return f.Text(1, w.key).Run("lifting a fence");
  }
  Stmt f(*writer_sql_, "INSERT OR REPLACE INTO fences (key, target, target_sum) VALUES (?, ?, ?)");
  return f.Text(1, w.key)
      .Text(2, w.target)
      .Int(3, RecordSum("fence", w.key, 0, w.target))
      .Run("saving a fence");
}

}  // namespace f2obo::server
