// SqliteSessionStore's reading side: every session, reply and group at start
// (LoadAll), one session (LoadSession), and a state stored as a head plus part rows joined back
// (JoinParts), each record's checksum verified (the writing side:
// sqlite_session_store.cc).
#include <sqlite3.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/state.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_errors.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::RecordSum;
using store_detail::Stmt;

namespace {

// Why the checksum in column `col` of `row` does not vouch for a blob whose
// checksum is `computed`; empty if it does.
std::string SumProblem(const Stmt& row, int col, int64_t computed) {
  if (row.IsNull(col)) return "checksum missing (corrupt record)";
  const int64_t stored = row.ColumnInt(col);
  if (stored == computed) return "";
  return absl::StrCat("checksum mismatch (corrupt record: stored ",
                      absl::Hex(static_cast<uint64_t>(stored), absl::kZeroPad16), ", computed ",
                      absl::Hex(static_cast<uint64_t>(computed), absl::kZeroPad16), ")");
}

}  // namespace

absl::StatusOr<Checkpoint> SqliteSessionStore::JoinParts(sqlite3* db, const std::string& id,
                                                         const std::string& head,
                                                         int64_t count) const {
  if (count < 0 || count > (int64_t{1} << 40)) {
    return absl::DataLossError(absl::StrCat("state: ", count, " parts is not a part count"));
  }
  absl::StatusOr<Checkpoint> joined = DeserializeCheckpointHead(head, static_cast<size_t>(count));
  if (!joined.ok()) return joined.status();
  Stmt rows(db, "SELECT idx, part, part_sum, file FROM state_parts WHERE id = ? ORDER BY idx");
  if (!rows.ok()) return rows.Error("reading state parts");
  rows.Text(1, id);
  int rc;
  while ((rc = rows.Step()) == SQLITE_ROW) {
    const int64_t index = rows.ColumnInt(0);
    absl::string_view bytes = rows.ColumnView(1);
    absl::StatusOr<std::string> file;  // a part in a side file
    if (!rows.IsNull(3)) {
      file = ReadSideFile(rows.Column(3));
      if (!file.ok()) {
        return absl::DataLossError(
            absl::StrCat("state part ", index, ": ", file.status().message()));
      }
      bytes = *file;
    }
    if (index < 0 || index >= count) {
      return absl::DataLossError(
          absl::StrCat("state part ", index, " beyond the state's ", count, " parts"));
    }
    if (std::string p = SumProblem(rows, 2, RecordSum("part", id, index, bytes)); !p.empty()) {
      return absl::DataLossError(absl::StrCat("state part ", index, " ", p));
    }
    // Decoded straight into the state: one pass, no joined encoding.
    if (absl::Status st = SetAuxPart(static_cast<size_t>(index), bytes, &*joined); !st.ok()) {
      return st;
    }
  }
  if (rc != SQLITE_DONE) return rows.Error("reading state parts");
  return joined;
}

absl::Status SqliteSessionStore::ReadSession(sqlite3* db, const std::string& id,
                                             StoredSession* out) const {
  StoredSession& s = *out;
  s.id = id;
  Stmt row(db,
           "SELECT spec, state, t, spec_sum, state_sum, parts, file FROM sessions WHERE id = ?");
  if (!row.ok())
    return absl::DataLossError(absl::StrCat("unreadable row (", sqlite3_errmsg(db), ")"));
  const int step = row.Text(1, id).Step();
  if (step == SQLITE_DONE) return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  if (step != SQLITE_ROW) {
    return absl::DataLossError(absl::StrCat("unreadable row (", sqlite3_errmsg(db), ")"));
  }
  const std::string spec = row.Column(0);
  std::string state = row.Column(1);
  if (!row.IsNull(6)) {  // in a side file
    absl::StatusOr<std::string> file = ReadSideFile(row.Column(6));
    if (!file.ok()) return absl::DataLossError(absl::StrCat("state ", file.status().message()));
    state = *std::move(file);
  }
  const int64_t t = row.ColumnInt(2);
  if (std::string p = SumProblem(row, 3, RecordSum("spec", id, 0, spec)); !p.empty()) {
    return absl::DataLossError(absl::StrCat("spec ", p));
  }
  if (std::string p = SumProblem(row, 4, RecordSum("state", id, t, state)); !p.empty()) {
    return absl::DataLossError(absl::StrCat("state ", p));
  }
  if (!s.spec.ParseFromString(spec)) return absl::DataLossError("spec does not parse");
  // In parts: the head and the row of every non-empty aux vector, joined
  // as they are decoded (the state is not encoded whole again).
  absl::StatusOr<Checkpoint> st =
      row.IsNull(5) ? DeserializeCheckpoint(state) : JoinParts(db, id, state, row.ColumnInt(5));
  if (!st.ok()) return absl::DataLossError(st.status().message());
  if (st->state.t != t) {
    return absl::DataLossError(
        absl::StrCat("state is at step ", st->state.t, " but its row says ", t));
  }
  s.state = *std::move(st);
  Stmt replies(db, "SELECT t, reply, reply_sum FROM replies WHERE id = ? ORDER BY t");
  if (!replies.ok()) return replies.Error("reading replies");
  replies.Text(1, id);
  int rc = SQLITE_DONE;
  while ((rc = replies.Step()) == SQLITE_ROW) {
    const int64_t rt = replies.ColumnInt(0);
    const std::string bytes = replies.Column(1);
    v1::StepReply r;
    // (Rows are keyed by the step after the reply's; files written before
    // ReplaceReplies keyed a PutSession's by the reply's own step.  Either
    // loads: the checksum binds the reply to its row's key.)  Not loaded
    // without every reply: a client retrying an acknowledged step would
    // otherwise get no reply, or a different one.
    if (std::string p = SumProblem(replies, 2, RecordSum("reply", id, rt, bytes)); !p.empty()) {
      return absl::DataLossError(absl::StrCat("cached reply at t=", rt, ": ", p));
    }
    if (!r.ParseFromString(bytes)) {
      return absl::DataLossError(absl::StrCat("cached reply at t=", rt, " does not parse"));
    }
    s.replies.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) {
    return absl::DataLossError(absl::StrCat("reply cache unreadable (", sqlite3_errmsg(db), ")"));
  }
  // Only the list: a checkpoint's bytes are read (and verified) on use.
  Stmt checkpoints(db, "SELECT t FROM checkpoints WHERE id = ? ORDER BY t");
  if (!checkpoints.ok()) return checkpoints.Error("listing checkpoints");
  checkpoints.Text(1, id);
  while ((rc = checkpoints.Step()) == SQLITE_ROW) s.checkpoints.push_back(checkpoints.ColumnInt(0));
  if (rc != SQLITE_DONE) return checkpoints.Error("listing checkpoints");
  return absl::OkStatus();
}

absl::StatusOr<StoredSession> SqliteSessionStore::LoadSession(const std::string& id) {
  // On a read connection of its own (as ReadCheckpointParts), in one read
  // transaction: the writer thread's connection is its own.
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    const std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return StoreError(SQLITE_CANTOPEN, "loading a session", msg);
  }
  struct Closer {
    sqlite3* db;
    ~Closer() { sqlite3_close(db); }
  } closer{db};
  sqlite3_busy_timeout(db, 5000);
  Stmt begin(db, "BEGIN");
  if (absl::Status s = begin.Run("loading a session"); !s.ok()) return s;
  StoredSession out;
  if (absl::Status s = ReadSession(db, id, &out); !s.ok()) {
    if (absl::IsDataLoss(s)) {
      return absl::DataLossError(absl::StrCat("session '", id, "': ", s.message()));
    }
    return s;
  }
  return out;
}

absl::StatusOr<std::vector<SessionSummary>> SqliteSessionStore::ListSessions() {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
      SQLITE_OK) {
    const std::string msg = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return StoreError(SQLITE_CANTOPEN, "listing sessions", msg);
  }
  struct Closer {
    sqlite3* db;
    ~Closer() { sqlite3_close(db); }
  } closer{db};
  sqlite3_busy_timeout(db, 5000);
  Stmt list(db, "SELECT id, spec, t, spec_sum FROM sessions ORDER BY id");
  if (!list.ok()) return list.Error("listing sessions");
  std::vector<SessionSummary> out;
  int rc;
  while ((rc = list.Step()) == SQLITE_ROW) {
    SessionSummary s;
    s.id = list.Column(0);
    s.t = list.ColumnInt(2);
    const std::string spec = list.Column(1);
    if (SumProblem(list, 3, RecordSum("spec", s.id, 0, spec)).empty()) {
      (void)s.spec.ParseFromString(spec);
    }
    out.push_back(std::move(s));
  }
  if (rc != SQLITE_DONE) return list.Error("listing sessions");
  return out;
}

absl::StatusOr<int64_t> SqliteSessionStore::StoredStepIndex(const std::string& id) {
  absl::StatusOr<StoredSession> s = LoadSession(id);  // (not on a hot path here)
  if (!s.ok()) return s.status();
  return s->state.state.t;
}

absl::StatusOr<LoadedStore> SqliteSessionStore::LoadAll() {
  LoadedStore out;
  std::vector<std::string> ids;
  {
    Stmt list(db_, "SELECT id FROM sessions ORDER BY id");
    if (!list.ok()) return list.Error("listing sessions");
    int rc;
    while ((rc = list.Step()) == SQLITE_ROW) ids.push_back(list.Column(0));
    if (rc != SQLITE_DONE) return list.Error("listing sessions");
  }
  // Each session is read on its own, so damage to one leaves the others.
  for (const std::string& id : ids) {
    StoredSession st;
    const absl::Status read = ReadSession(db_, id, &st);
    if (absl::IsDataLoss(read)) {
      out.damaged.push_back(absl::StrCat("session '", id, "': ", read.message()));
      continue;
    }
    if (!read.ok()) return read;
    out.sessions.push_back(std::move(st));
  }
  Stmt groups(db_, "SELECT id, members, members_sum FROM groups ORDER BY id");
  if (!groups.ok()) return groups.Error("listing groups");
  int rc;
  while ((rc = groups.Step()) == SQLITE_ROW) {
    StoredGroup g;
    g.id = groups.Column(0);
    const std::string members = groups.Column(1);
    if (std::string p = SumProblem(groups, 2, RecordSum("group", g.id, 0, members)); !p.empty()) {
      // Its member sessions load on their own; only the grouping is lost.
      out.damaged.push_back(absl::StrCat("group '", g.id, "': member list ", p));
      continue;
    }
    for (absl::string_view m : absl::StrSplit(members, '\n', absl::SkipEmpty())) {
      g.members.emplace_back(m);
    }
    out.groups.push_back(std::move(g));
  }
  if (rc != SQLITE_DONE) {
    out.damaged.push_back(absl::StrCat("groups: unreadable (", sqlite3_errmsg(db_), ")"));
  }
  if (absl::Status s = LoadFences(out); !s.ok()) return s;
  return out;
}

}  // namespace f2obo::server
