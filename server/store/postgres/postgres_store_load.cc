// The PostgreSQL store's reads: every session at start (LoadAll), one
// session when a server is first asked for it (LoadSession), a checkpoint
// on use; each record checksum-verified (record_sum.h), a
// damaged one reported and not used.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/state.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/postgres_session_store.h"
#include "server/store/record_sum.h"

namespace f2obo::server {

using pg::Param;
using store_detail::RecordSum;

namespace {

std::string Dec(int64_t v) { return std::to_string(v); }

// Why the checksum in column `col` of `row` does not vouch for `blob`
// (tag, id, t); "" if it does.
std::string SumProblem(const pg::Result& r, int row, int col, absl::string_view tag,
                       absl::string_view id, int64_t t, absl::string_view blob) {
  const int64_t computed = RecordSum(tag, id, t, blob);
  const int64_t stored = r.Int(row, col);
  if (stored == computed) return "";
  return absl::StrCat("checksum mismatch (corrupt record: stored ",
                      absl::Hex(static_cast<uint64_t>(stored), absl::kZeroPad16), ", computed ",
                      absl::Hex(static_cast<uint64_t>(computed), absl::kZeroPad16), ")");
}

// Joins `head` with the part rows `sql` returns (idx, part, part_sum) for
// (id, t): each verified (tag `tag`, bound to id and idx) and decoded into
// the state as it is read.
absl::StatusOr<Checkpoint> JoinRows(pg::Conn& c, const char* sql, const std::string& id, int64_t t,
                                    const std::string& head, int64_t count, absl::string_view tag) {
  if (count < 0 || count > (int64_t{1} << 40)) {
    return absl::DataLossError(absl::StrCat("state: ", count, " parts is not a part count"));
  }
  absl::StatusOr<Checkpoint> joined = DeserializeCheckpointHead(head, static_cast<size_t>(count));
  if (!joined.ok()) return joined.status();
  absl::StatusOr<pg::Result> rows = c.Run("reading state parts", sql, {Param(id), Param(Dec(t))});
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->rows(); ++i) {
    const int64_t idx = rows->Int(i, 0);
    const absl::string_view bytes = rows->Bytes(i, 1);
    if (idx < 0 || idx >= count) {
      return absl::DataLossError(
          absl::StrCat("state part ", idx, " beyond the state's ", count, " parts"));
    }
    if (std::string p = SumProblem(*rows, i, 2, tag, id, idx, bytes); !p.empty()) {
      return absl::DataLossError(absl::StrCat("state part ", idx, " ", p));
    }
    if (absl::Status s = SetAuxPart(static_cast<size_t>(idx), bytes, &*joined); !s.ok()) return s;
  }
  return joined;
}

}  // namespace

absl::Status PostgresSessionStore::ReadSession(pg::Conn& c, const std::string& id,
                                               StoredSession* out, int64_t* gen) {
  absl::StatusOr<pg::Result> row =
      c.Run("reading a session",
            "SELECT spec, spec_sum, state, state_sum, parts, next_t, gen FROM f2obo_sessions "
            "WHERE id = $1::text",
            {Param(id)});
  if (!row.ok()) return row.status();
  if (row->rows() != 1) return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  StoredSession& st = *out;
  st.id = id;
  const int64_t t = row->Int(0, 5);
  *gen = row->Int(0, 6);
  const absl::string_view spec = row->Bytes(0, 0);
  const std::string state(row->Bytes(0, 2));
  if (std::string p = SumProblem(*row, 0, 1, "spec", id, 0, spec); !p.empty()) {
    return absl::DataLossError(absl::StrCat("spec ", p));
  }
  if (std::string p = SumProblem(*row, 0, 3, "state", id, t, state); !p.empty()) {
    return absl::DataLossError(absl::StrCat("state ", p));
  }
  if (!st.spec.ParseFromArray(spec.data(), static_cast<int>(spec.size()))) {
    return absl::DataLossError("spec does not parse");
  }
  absl::StatusOr<Checkpoint> decoded =
      row->IsNull(0, 4)
          ? DeserializeCheckpoint(state)
          : JoinRows(c,
                     "SELECT idx, part, part_sum FROM f2obo_state_parts WHERE id = $1::text "
                     "AND $2::bigint >= 0 ORDER BY idx",
                     id, 0, state, row->Int(0, 4), "part");
  if (!decoded.ok()) {
    if (c.broken()) return decoded.status();  // not the record's fault
    return absl::DataLossError(decoded.status().message());
  }
  if (decoded->state.t != t) {
    return absl::DataLossError(
        absl::StrCat("state is at step ", decoded->state.t, " but its row says ", t));
  }
  st.state = *std::move(decoded);
  absl::StatusOr<pg::Result> replies = c.Run(
      "reading replies",
      "SELECT t, reply, reply_sum FROM f2obo_replies WHERE id = $1::text ORDER BY t", {Param(id)});
  if (!replies.ok()) return replies.status();
  for (int i = 0; i < replies->rows(); ++i) {
    const int64_t rt = replies->Int(i, 0);
    const absl::string_view bytes = replies->Bytes(i, 1);
    v1::StepReply r;
    // Not loaded without it: a retried acknowledged step would get no
    // reply, or another.
    if (std::string p = SumProblem(*replies, i, 2, "reply", id, rt, bytes); !p.empty()) {
      return absl::DataLossError(absl::StrCat("cached reply at t=", rt, ": ", p));
    }
    if (!r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
      return absl::DataLossError(absl::StrCat("cached reply at t=", rt, " does not parse"));
    }
    st.replies.push_back(std::move(r));
  }
  absl::StatusOr<pg::Result> checkpoints =
      c.Run("listing checkpoints", "SELECT t FROM f2obo_checkpoints WHERE id = $1::text ORDER BY t",
            {Param(id)});
  if (!checkpoints.ok()) return checkpoints.status();
  for (int i = 0; i < checkpoints->rows(); ++i) st.checkpoints.push_back(checkpoints->Int(i, 0));
  return absl::OkStatus();
}

absl::StatusOr<StoredSession> PostgresSessionStore::LoadSession(const std::string& id) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  pg::Conn& c = **acquired;
  // One snapshot: the row, its parts and its replies of one commit.
  absl::Status s =
      c.Exec("loading a session", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").status();
  StoredSession out;
  int64_t gen = kStaleGen;
  if (s.ok()) s = ReadSession(c, id, &out, &gen);
  if (!c.broken()) (void)c.Exec("loading a session", "COMMIT");
  pool_.Release(*std::move(acquired));
  if (!s.ok()) {
    if (absl::IsDataLoss(s)) {
      return absl::DataLossError(absl::StrCat("session '", id, "': ", s.message()));
    }
    return s;
  }
  // The copy the caller builds from it is at this write version.
  NoteGen(id, gen);
  return out;
}

absl::StatusOr<bool> PostgresSessionStore::CopyIsCurrent(const std::string& id, int64_t t) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  absl::StatusOr<pg::Result> row =
      (*acquired)->Run("reading a session's step index",
                       "SELECT next_t, gen FROM f2obo_sessions WHERE id = $1::text", {Param(id)});
  pool_.Release(*std::move(acquired));
  if (!row.ok()) return row.status();
  if (row->rows() == 0) return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  const std::optional<int64_t> gen = KnownGen(id);
  return row->Int(0, 0) == t && (!gen.has_value() || *gen == row->Int(0, 1));
}

absl::StatusOr<std::vector<SessionSummary>> PostgresSessionStore::ListSessions() {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  absl::StatusOr<pg::Result> rows = (*acquired)->Run(
      "listing sessions", "SELECT id, spec, spec_sum, next_t FROM f2obo_sessions ORDER BY id");
  pool_.Release(*std::move(acquired));
  if (!rows.ok()) return rows.status();
  std::vector<SessionSummary> out;
  out.reserve(static_cast<size_t>(rows->rows()));
  for (int i = 0; i < rows->rows(); ++i) {
    SessionSummary s;
    s.id = std::string(rows->Bytes(i, 0));
    s.t = rows->Int(i, 3);
    const absl::string_view spec = rows->Bytes(i, 1);
    if (SumProblem(*rows, i, 2, "spec", s.id, 0, spec).empty()) {
      (void)s.spec.ParseFromArray(spec.data(), static_cast<int>(spec.size()));
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<int64_t> PostgresSessionStore::StoredStepIndex(const std::string& id) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  absl::StatusOr<pg::Result> row =
      (*acquired)->Run("reading a session's step index",
                       "SELECT next_t FROM f2obo_sessions WHERE id = $1::text", {Param(id)});
  pool_.Release(*std::move(acquired));
  if (!row.ok()) return row.status();
  if (row->rows() == 0) return absl::NotFoundError(absl::StrCat("session '", id, "' not found"));
  return row->Int(0, 0);
}

namespace {

// Group row `i` of `r` (id, members, members_sum), verified.
absl::StatusOr<StoredGroup> GroupOfRow(const pg::Result& r, int i) {
  StoredGroup g;
  g.id = std::string(r.Bytes(i, 0));
  const absl::string_view members = r.Bytes(i, 1);
  if (std::string p = SumProblem(r, i, 2, "group", g.id, 0, members); !p.empty()) {
    return absl::DataLossError(absl::StrCat("group '", g.id, "': member list ", p));
  }
  for (absl::string_view m : absl::StrSplit(members, '\n', absl::SkipEmpty())) {
    g.members.emplace_back(m);
  }
  return g;
}

}  // namespace

absl::StatusOr<StoredGroup> PostgresSessionStore::LoadGroup(const std::string& id) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  absl::StatusOr<pg::Result> row = (*acquired)->Run(
      "reading a group", "SELECT id, members, members_sum FROM f2obo_groups WHERE id = $1::text",
      {Param(id)});
  pool_.Release(*std::move(acquired));
  if (!row.ok()) return row.status();
  if (row->rows() == 0) return absl::NotFoundError(absl::StrCat("group '", id, "' not found"));
  return GroupOfRow(*row, 0);
}

absl::StatusOr<std::string> PostgresSessionStore::GroupOf(const std::string& session_id) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  // The member lists holding the id's bytes, then an exact match of one
  // member among them.
  absl::StatusOr<pg::Result> rows =
      (*acquired)->Run("finding a session's group",
                       "SELECT id, members, members_sum FROM f2obo_groups "
                       "WHERE position(convert_to($1::text, 'UTF8') IN members) > 0",
                       {Param(session_id)});
  pool_.Release(*std::move(acquired));
  if (!rows.ok()) return rows.status();
  for (int i = 0; i < rows->rows(); ++i) {
    absl::StatusOr<StoredGroup> g = GroupOfRow(*rows, i);
    if (!g.ok()) continue;  // reported where it is loaded
    for (const std::string& m : g->members) {
      if (m == session_id) return g->id;
    }
  }
  return std::string();
}

absl::StatusOr<LoadedStore> PostgresSessionStore::LoadAll() { return Load(true); }

absl::StatusOr<LoadedStore> PostgresSessionStore::LoadGroupsAndFences() { return Load(false); }

absl::StatusOr<LoadedStore> PostgresSessionStore::Load(bool with_sessions) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  pg::Conn& c = **acquired;
  LoadedStore out;
  // One snapshot for the whole read: no session half-written by a
  // concurrent server.
  absl::Status s =
      c.Exec("loading sessions", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").status();
  std::vector<std::string> ids;
  if (s.ok() && with_sessions) {
    absl::StatusOr<pg::Result> list =
        c.Run("listing sessions", "SELECT id FROM f2obo_sessions ORDER BY id");
    s = list.status();
    if (s.ok()) {
      for (int i = 0; i < list->rows(); ++i) ids.emplace_back(list->Bytes(i, 0));
    }
  }
  for (size_t n = 0; s.ok() && n < ids.size(); ++n) {
    StoredSession st;
    int64_t gen = kStaleGen;
    const absl::Status read = ReadSession(c, ids[n], &st, &gen);
    if (absl::IsNotFound(read)) continue;  // deleted meanwhile: not in this snapshot
    if (absl::IsDataLoss(read)) {
      out.damaged.push_back(absl::StrCat("session '", ids[n], "': ", read.message()));
      continue;
    }
    if (!read.ok()) {
      s = read;
      break;
    }
    NoteGen(ids[n], gen);
    out.sessions.push_back(std::move(st));
  }
  if (s.ok()) {
    absl::StatusOr<pg::Result> groups =
        c.Run("listing groups", "SELECT id, members, members_sum FROM f2obo_groups ORDER BY id");
    s = groups.status();
    for (int i = 0; s.ok() && i < groups->rows(); ++i) {
      absl::StatusOr<StoredGroup> g = GroupOfRow(*groups, i);
      if (!g.ok()) {
        out.damaged.push_back(std::string(g.status().message()));
        continue;
      }
      out.groups.push_back(*std::move(g));
    }
  }
  if (s.ok()) {
    absl::StatusOr<pg::Result> fences =
        c.Run("listing fences", "SELECT key, target, target_sum FROM f2obo_fences ORDER BY key");
    s = fences.status();
    for (int i = 0; s.ok() && i < fences->rows(); ++i) {
      StoredFence f{std::string(fences->Bytes(i, 0)), std::string(fences->Bytes(i, 1))};
      if (std::string p = SumProblem(*fences, i, 2, "fence", f.key, 0, f.target); !p.empty()) {
        out.damaged.push_back(absl::StrCat("fence '", f.key, "': ", p));
        f.target.clear();  // still a fence: its sessions must not step
      }
      out.fences.push_back(std::move(f));
    }
  }
  if (!c.broken()) (void)c.Exec("loading sessions", s.ok() ? "COMMIT" : "ROLLBACK");
  pool_.Release(*std::move(acquired));
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Checkpoint> PostgresSessionStore::ReadCheckpoint(const std::string& id, int64_t t,
                                                                std::string* whole) {
  absl::StatusOr<std::unique_ptr<pg::Conn>> acquired = pool_.Acquire(kNoDeadline);
  if (!acquired.ok()) return acquired.status();
  pg::Conn& c = **acquired;
  absl::StatusOr<Checkpoint> out = [&]() -> absl::StatusOr<Checkpoint> {
    if (absl::Status s =
            c.Exec("reading a checkpoint", "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                .status();
        !s.ok()) {
      return s;
    }
    absl::StatusOr<pg::Result> row =
        c.Run("reading a checkpoint",
              "SELECT state, state_sum, parts FROM f2obo_checkpoints WHERE id = $1::text AND t = "
              "$2::bigint",
              {Param(id), Param(Dec(t))});
    if (!row.ok()) return row.status();
    if (row->rows() == 0) {
      return absl::NotFoundError(
          absl::StrCat("session '", id, "' has no checkpoint at step index ", t));
    }
    const std::string head(row->Bytes(0, 0));
    if (std::string p = SumProblem(*row, 0, 1, "checkpoint", id, t, head); !p.empty()) {
      return absl::DataLossError(absl::StrCat("checkpoint ", t, " of session '", id, "': ", p));
    }
    if (whole != nullptr && row->IsNull(0, 2)) {  // the stored bytes, as they were written
      *whole = head;
      return Checkpoint();
    }
    absl::StatusOr<Checkpoint> decoded =
        row->IsNull(0, 2) ? DeserializeCheckpoint(head)
                          : JoinRows(c,
                                     "SELECT idx, part, part_sum FROM f2obo_checkpoint_parts "
                                     "WHERE id = $1::text AND t = $2::bigint ORDER BY idx",
                                     id, t, head, row->Int(0, 2), "checkpoint part");
    if (!decoded.ok()) {
      return absl::DataLossError(
          absl::StrCat("checkpoint ", t, " of session '", id, "': ", decoded.status().message()));
    }
    return decoded;
  }();
  if (!c.broken()) (void)c.Exec("reading a checkpoint", "COMMIT");
  pool_.Release(*std::move(acquired));
  return out;
}

absl::StatusOr<std::string> PostgresSessionStore::LoadCheckpoint(const std::string& id, int64_t t) {
  std::string whole;
  absl::StatusOr<Checkpoint> c = ReadCheckpoint(id, t, &whole);
  if (!c.ok()) return c.status();
  if (!whole.empty()) return whole;
  return SerializeCheckpoint(*c);
}

absl::StatusOr<Checkpoint> PostgresSessionStore::LoadCheckpointState(const std::string& id,
                                                                     int64_t t) {
  return ReadCheckpoint(id, t, nullptr);
}

}  // namespace f2obo::server
