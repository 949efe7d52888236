// The PostgreSQL store's calls (session_store.h's contract), each one
// transaction over the statements of postgres_store_writes.cc.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/store/postgres/pg_conn.h"
#include "server/store/postgres/postgres_session_store.h"
#include "server/store/record_sum.h"

namespace f2obo::server {

using pg::Param;
using store_detail::RecordSum;

namespace {
std::string Dec(int64_t v) { return std::to_string(v); }
}  // namespace

absl::StatusOr<bool> PostgresSessionStore::StoredAt(pg::Conn& c, const std::string& id, int64_t t,
                                                    const std::string* reply, int64_t* gen) {
  absl::StatusOr<pg::Result> r =
      c.Run("reading a session back", "SELECT next_t, gen FROM f2obo_sessions WHERE id = $1::text",
            {Param(id)});
  if (!r.ok()) return r.status();
  // Stored exactly as written: the write version read is the write's (a
  // later write would have moved the step index on).
  if (gen != nullptr) *gen = r->rows() == 1 && r->Int(0, 0) == t ? r->Int(0, 1) : kStaleGen;
  if (t == kAnyT) return r->rows() > 0;
  if (r->rows() == 0 || r->Int(0, 0) < t) return false;
  if (reply == nullptr) return r->Int(0, 0) == t;
  // At t or beyond: the step is stored if its reply is the one at t (a
  // later step of another server would have found the row at t and
  // committed on it; an older reply trimmed away means it is far behind).
  absl::StatusOr<pg::Result> cached =
      c.Run("reading a reply back",
            "SELECT reply FROM f2obo_replies WHERE id = $1::text AND t = $2::bigint",
            {Param(id), Param(Dec(t))});
  if (!cached.ok()) return cached.status();
  return cached->rows() == 1 && cached->Bytes(0, 0) == *reply;
}

absl::Status PostgresSessionStore::PutCheckpointRow(pg::Conn& c, const std::string& id, int64_t t,
                                                    const std::string& state) {
  for (const char* sql : {"DELETE FROM f2obo_checkpoints WHERE id = $1::text AND t = $2::bigint",
                          "DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text AND t = "
                          "$2::bigint"}) {
    if (absl::Status s = c.Run("replacing a checkpoint", sql, {Param(id), Param(Dec(t))}).status();
        !s.ok()) {
      return s;
    }
  }
  return c
      .Run("storing a checkpoint",
           "INSERT INTO f2obo_checkpoints (id, t, state, state_sum, parts) "
           "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint, NULL)",
           {Param(id), Param(Dec(t)), Param::Blob(state),
            Param(Dec(RecordSum("checkpoint", id, t, state)))})
      .status();
}

absl::Status PostgresSessionStore::PutSession(SessionRecord record, Deadline deadline) {
  const std::string id = record.id;
  const int64_t t = record.t;
  const std::string state_sum = Dec(RecordSum("state", id, t, record.state));
  int64_t written = kStaleGen;
  const absl::Status s = Transact(
      "storing a session", deadline, true,
      [&](pg::Conn& c) { return InsertSession(c, record, &written); },
      [&](pg::Conn& c) -> absl::StatusOr<bool> {
        // This write's row, not another server's of the same id: its
        // state's checksum binds its bytes, id and t.
        absl::StatusOr<pg::Result> r =
            c.Run("reading a session back",
                  "SELECT gen FROM f2obo_sessions WHERE id = $1::text AND next_t = $2::bigint "
                  "AND state_sum = $3::bigint",
                  {Param(id), Param(Dec(t)), Param(state_sum)});
        if (!r.ok()) return r.status();
        if (r->rows() == 1) written = r->Int(0, 0);
        return r->rows() == 1;
      });
  if (s.ok()) NoteGen(id, written);
  return s;
}

absl::Status PostgresSessionStore::DeleteSession(const std::string& id, Deadline deadline) {
  const absl::Status s = Transact(
      "deleting a session", deadline, true, [&](pg::Conn& c) { return DeleteSessionRows(c, id); },
      [&](pg::Conn& c) -> absl::StatusOr<bool> {
        absl::StatusOr<bool> there = StoredAt(c, id, kAnyT, nullptr);
        if (!there.ok()) return there.status();
        return !*there;
      },
      /*grows=*/false);
  if (s.ok()) ForgetGen(id);
  return s;
}

namespace {
std::string MemberList(const std::vector<std::string>& members) {
  return absl::StrJoin(members, "\n");
}
}  // namespace

absl::Status PostgresSessionStore::PutGroup(const std::string& id,
                                            const std::vector<std::string>& members) {
  const std::string list = MemberList(members);
  const auto body = [&](pg::Conn& c) {
    return c
        .Run("storing a group",
             "INSERT INTO f2obo_groups (id, members, members_sum) VALUES ($1::text, $2::bytea, "
             "$3::bigint) ON CONFLICT (id) DO UPDATE SET members = EXCLUDED.members, "
             "members_sum = EXCLUDED.members_sum",
             {Param(id), Param::Blob(list), Param(Dec(RecordSum("group", id, 0, list)))})
        .status();
  };
  const auto read_back = [&](pg::Conn& c) -> absl::StatusOr<bool> {
    absl::StatusOr<pg::Result> r =
        c.Run("reading a group back", "SELECT members FROM f2obo_groups WHERE id = $1::text",
              {Param(id)});
    if (!r.ok()) return r.status();
    return r->rows() == 1 && r->Bytes(0, 0) == list;
  };
  return Transact("storing a group", kNoDeadline, true, body, read_back);
}

absl::Status PostgresSessionStore::PutGroupWithSessions(const std::string& id,
                                                        const std::vector<SessionRecord>& members,
                                                        Deadline deadline) {
  std::vector<std::string> ids;
  for (const SessionRecord& r : members) ids.push_back(r.id);
  const std::string list = MemberList(ids);
  std::vector<int64_t> written(members.size(), kStaleGen);
  const auto body = [&](pg::Conn& c) {
    // Insert-only, as PutSession: a group or member id another server
    // stored first is ALREADY_EXISTS, and nothing of this one is written.
    absl::StatusOr<pg::Result> group =
        c.Run("storing a group",
              "INSERT INTO f2obo_groups (id, members, members_sum) VALUES ($1::text, $2::bytea, "
              "$3::bigint) ON CONFLICT (id) DO NOTHING",
              {Param(id), Param::Blob(list), Param(Dec(RecordSum("group", id, 0, list)))});
    if (!group.ok()) return group.status();
    if (group->affected() != 1) {
      return absl::AlreadyExistsError(
          absl::StrCat("group '", id, "' already exists (in the shared store)"));
    }
    for (size_t i = 0; i < members.size(); ++i) {
      if (absl::Status s = InsertSession(c, members[i], &written[i]); !s.ok()) return s;
    }
    return absl::OkStatus();
  };
  const auto read_back = [&](pg::Conn& c) -> absl::StatusOr<bool> {
    absl::StatusOr<pg::Result> r =
        c.Run("reading a group back", "SELECT members FROM f2obo_groups WHERE id = $1::text",
              {Param(id)});
    if (!r.ok()) return r.status();
    // Not this write's own versions: its members' copies are reloaded at
    // their first write.
    std::fill(written.begin(), written.end(), kStaleGen);
    return r->rows() == 1 && r->Bytes(0, 0) == list;
  };
  const absl::Status s = Transact("storing a group", deadline, true, body, read_back);
  if (s.ok()) {
    for (size_t i = 0; i < members.size(); ++i) NoteGen(ids[i], written[i]);
  }
  return s;
}

absl::Status PostgresSessionStore::DeleteGroup(const std::string& id,
                                               const std::vector<std::string>& members,
                                               Deadline deadline) {
  const auto body = [&](pg::Conn& c) {
    for (const std::string& m : members) {
      if (absl::Status s = DeleteSessionRows(c, m); !s.ok()) return s;
    }
    return c.Run("deleting a group", "DELETE FROM f2obo_groups WHERE id = $1::text", {Param(id)})
        .status();
  };
  const auto read_back = [&](pg::Conn& c) -> absl::StatusOr<bool> {
    absl::StatusOr<pg::Result> r = c.Run(
        "reading a group back", "SELECT 1 FROM f2obo_groups WHERE id = $1::text", {Param(id)});
    if (!r.ok()) return r.status();
    return r->rows() == 0;
  };
  const absl::Status s =
      Transact("deleting a group", deadline, true, body, read_back, /*grows=*/false);
  if (s.ok()) {
    for (const std::string& m : members) ForgetGen(m);
  }
  return s;
}

absl::Status PostgresSessionStore::CommitStep(const std::string& id, int64_t t, std::string state,
                                              const v1::StepReply& reply, int keep_replies,
                                              int keep_checkpoints, Deadline deadline) {
  const std::string bytes = reply.SerializeAsString();
  const bool sync = durability_ == Durability::kSync;
  const std::optional<int64_t> gen = KnownGen(id);
  int64_t written = kStaleGen;
  const std::string what = absl::StrCat("storing step ", t - 1, " of session '", id, "'");
  const ReadBack read_back = [&](pg::Conn& c) { return StoredAt(c, id, t, &bytes, &written); };
  absl::Status s =
      OneStatement(nullptr, keep_checkpoints)
          ? BatchedStep(what, deadline, id, t, gen,
                        StepStatement(id, t, gen, nullptr, &state, bytes, keep_replies, sync),
                        read_back, &written)
          : Transact(
                what, deadline, sync,
                [&](pg::Conn& c) {
                  return StepRows(c, id, t, gen, nullptr, &state, bytes, keep_replies,
                                  keep_checkpoints, sync, &written);
                },
                read_back);
  if (s.ok()) NoteGen(id, written);
  NoteStepOutcome({id}, s);
  return s;
}

absl::Status PostgresSessionStore::CommitStep(const std::string& id, int64_t t, StepState state,
                                              const v1::StepReply& reply, int keep_replies,
                                              int keep_checkpoints, Deadline deadline) {
  std::vector<SessionStep> one(1);
  one[0].id = id;
  one[0].t = t;
  one[0].state = std::move(state);
  one[0].reply = reply;
  one[0].keep_checkpoints = keep_checkpoints;
  return CommitSteps(std::move(one), keep_replies, deadline);
}

absl::Status PostgresSessionStore::CommitSteps(std::vector<SessionStep> steps, int keep_replies,
                                               Deadline deadline) {
  std::vector<std::string> ids;
  for (const SessionStep& s : steps) {
    if (!s.state.complete && NeedsCompleteState(s.id)) {
      return absl::FailedPreconditionError(
          absl::StrCat("session '", s.id,
                       "': an earlier step write failed, so this step must "
                       "write its state complete (not written)"));
    }
    ids.push_back(s.id);
  }
  // Rows locked in one order by every server: two group steps cannot
  // deadlock.
  std::sort(steps.begin(), steps.end(),
            [](const SessionStep& a, const SessionStep& b) { return a.id < b.id; });
  std::vector<std::string> replies;
  std::vector<std::optional<int64_t>> gens;
  for (const SessionStep& s : steps) {
    replies.push_back(s.reply.SerializeAsString());
    gens.push_back(KnownGen(s.id));
  }
  std::vector<int64_t> written(steps.size(), kStaleGen);
  const bool sync = durability_ == Durability::kSync;
  const bool one = steps.size() == 1 && OneStatement(&steps[0].state, steps[0].keep_checkpoints);
  const std::string what =
      steps.size() == 1
          ? absl::StrCat("storing step ", steps[0].t - 1, " of session '", steps[0].id, "'")
          : absl::StrCat("storing a group step of ", steps.size(), " sessions");
  // All or none: the first session tells (the others' versions are then
  // unknown: their copies are reloaded at their next write).
  const ReadBack read_back = [&](pg::Conn& c) {
    std::fill(written.begin(), written.end(), kStaleGen);
    return StoredAt(c, steps[0].id, steps[0].t, &replies[0], &written[0]);
  };
  const absl::Status s =
      one ? BatchedStep(what, deadline, steps[0].id, steps[0].t, gens[0],
                        StepStatement(steps[0].id, steps[0].t, gens[0], &steps[0].state, nullptr,
                                      replies[0], keep_replies, sync),
                        read_back, &written[0])
          : Transact(
                what, deadline, sync,
                [&](pg::Conn& c) {
                  for (size_t i = 0; i < steps.size(); ++i) {
                    const SessionStep& st = steps[i];
                    if (absl::Status w =
                            StepRows(c, st.id, st.t, gens[i], &st.state, nullptr, replies[i],
                                     keep_replies, st.keep_checkpoints, sync, &written[i]);
                        !w.ok()) {
                      return w;
                    }
                  }
                  return absl::OkStatus();
                },
                read_back);
  if (s.ok()) {
    for (size_t i = 0; i < steps.size(); ++i) NoteGen(steps[i].id, written[i]);
  }
  NoteStepOutcome(ids, s);
  return s;
}

absl::Status PostgresSessionStore::BatchedStep(const std::string& what, Deadline deadline,
                                               const std::string& id, int64_t t,
                                               std::optional<int64_t> gen,
                                               const pg::Statement& statement,
                                               const ReadBack& read_back, int64_t* written) {
  return transactions_.RunBatched(
      what, deadline, id, statement,
      [&](pg::Conn& c, const pg::Result& r) { return StepMoved(c, r, id, t, gen, written); },
      read_back, /*grows=*/true);
}

absl::Status PostgresSessionStore::SessionAt(pg::Conn& c, const std::string& id, int64_t t,
                                             std::optional<int64_t> gen, int64_t* written) {
  // Locked to the transaction's end: no step of another server between.
  absl::StatusOr<pg::Result> r =
      c.Run("writing a session's version",
            "UPDATE f2obo_sessions SET gen = nextval('f2obo_gen') WHERE id = $1::text "
            "AND next_t = $2::bigint AND ($3::bigint IS NULL OR gen = $3::bigint) RETURNING gen",
            {Param(id), Param(Dec(t)), gen.has_value() ? Param(Dec(*gen)) : Param::Null()});
  if (!r.ok()) return r.status();
  if (r->rows() == 1) {
    *written = r->Int(0, 0);
    return absl::OkStatus();
  }
  return Missed(c, id, t, gen);
}

absl::Status PostgresSessionStore::PutCheckpoint(const std::string& id, int64_t t,
                                                 std::string state, int keep) {
  const std::optional<int64_t> gen = KnownGen(id);
  int64_t written = kStaleGen;
  const absl::Status s = Transact(
      "storing a checkpoint", kNoDeadline, true,
      [&](pg::Conn& c) {
        if (absl::Status at = SessionAt(c, id, t, gen, &written); !at.ok()) return at;
        absl::Status s = PutCheckpointRow(c, id, t, state);
        return s.ok() ? TrimCheckpoints(c, id, std::max(keep, 1)) : s;
      },
      [&](pg::Conn& c) { return CheckpointStored(c, id, t, &written); });
  if (s.ok()) NoteGen(id, written);
  return s;
}

absl::Status PostgresSessionStore::PutCheckpoint(const std::string& id, int64_t t,
                                                 CheckpointParts parts, int keep) {
  const std::optional<int64_t> gen = KnownGen(id);
  int64_t written = kStaleGen;
  const absl::Status s = Transact(
      "storing a checkpoint", kNoDeadline, true,
      [&](pg::Conn& c) {
        if (absl::Status at = SessionAt(c, id, t, gen, &written); !at.ok()) return at;
        absl::Status s = InsertCheckpointParts(c, id, t, parts.head, parts);
        return s.ok() ? TrimCheckpoints(c, id, std::max(keep, 1)) : s;
      },
      [&](pg::Conn& c) { return CheckpointStored(c, id, t, &written); });
  if (s.ok()) NoteGen(id, written);
  return s;
}

absl::StatusOr<bool> PostgresSessionStore::CheckpointStored(pg::Conn& c, const std::string& id,
                                                            int64_t t, int64_t* written) {
  // The session's version is not known to be this write's: its copy is
  // reloaded at its next write.
  *written = kStaleGen;
  absl::StatusOr<pg::Result> r =
      c.Run("reading a checkpoint back",
            "SELECT 1 FROM f2obo_checkpoints WHERE id = $1::text AND t = $2::bigint",
            {Param(id), Param(Dec(t))});
  if (!r.ok()) return r.status();
  return r->rows() == 1;
}

absl::Status PostgresSessionStore::RollbackSession(const std::string& id, int64_t t,
                                                   std::string state,
                                                   const std::vector<v1::StepReply>& replies,
                                                   int64_t from_t) {
  const std::optional<int64_t> gen = KnownGen(id);
  int64_t written = kStaleGen;
  const auto body = [&](pg::Conn& c) -> absl::Status {
    absl::StatusOr<pg::Result> moved = c.Run(
        "rolling a session back",
        "UPDATE f2obo_sessions SET state = $3::bytea, state_sum = $4::bigint, parts = NULL, "
        "next_t = $2::bigint, gen = nextval('f2obo_gen') WHERE id = $1::text "
        "AND ($5::bigint < 0 OR next_t = $5::bigint) "
        "AND ($6::bigint IS NULL OR gen = $6::bigint) RETURNING gen",
        {Param(id), Param(Dec(t)), Param::Blob(state), Param(Dec(RecordSum("state", id, t, state))),
         Param(Dec(from_t)), gen.has_value() ? Param(Dec(*gen)) : Param::Null()});
    if (!moved.ok()) return moved.status();
    if (moved->rows() != 1) {
      absl::StatusOr<bool> there = StoredAt(c, id, kAnyT, nullptr);
      if (!there.ok()) return there.status();
      if (!*there) return absl::NotFoundError(absl::StrCat("session '", id, "' is not stored"));
      return absl::AbortedError(absl::StrCat("session '", id, "' is not at step index ", from_t,
                                             " in the store, or was written since this server "
                                             "read it: another server wrote it"));
    }
    written = moved->Int(0, 0);
    for (const char* sql :
         {"DELETE FROM f2obo_state_parts WHERE id = $1::text AND $2::bigint >= 0",
          "DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text AND t > $2::bigint",
          "DELETE FROM f2obo_checkpoints WHERE id = $1::text AND t > $2::bigint"}) {
      if (absl::Status s =
              c.Run("rolling a session back", sql, {Param(id), Param(Dec(t))}).status();
          !s.ok()) {
        return s;
      }
    }
    return ReplaceReplies(c, id, replies);
  };
  absl::Status s = Transact(
      "rolling a session back", kNoDeadline, true, body, [&](pg::Conn& c) -> absl::StatusOr<bool> {
        absl::StatusOr<pg::Result> r = c.Run(
            "reading a session back",
            "SELECT state, gen FROM f2obo_sessions WHERE id = $1::text AND next_t = $2::bigint",
            {Param(id), Param(Dec(t))});
        if (!r.ok()) return r.status();
        const bool stored = r->rows() == 1 && r->Bytes(0, 0) == state;
        written = stored ? r->Int(0, 1) : kStaleGen;
        return stored;
      });
  if (s.ok()) {
    NoteGen(id, written);
    NoteStepOutcome({id}, s);
  }
  return s;
}

absl::Status PostgresSessionStore::PutFence(const std::string& key, const std::string& target) {
  const auto body = [&](pg::Conn& c) {
    if (target.empty()) {
      return c.Run("lifting a fence", "DELETE FROM f2obo_fences WHERE key = $1::text", {Param(key)})
          .status();
    }
    return c
        .Run("storing a fence",
             "INSERT INTO f2obo_fences (key, target, target_sum) VALUES ($1::text, $2::text, "
             "$3::bigint) ON CONFLICT (key) DO UPDATE SET target = EXCLUDED.target, "
             "target_sum = EXCLUDED.target_sum",
             {Param(key), Param(target), Param(Dec(RecordSum("fence", key, 0, target)))})
        .status();
  };
  const auto read_back = [&](pg::Conn& c) -> absl::StatusOr<bool> {
    absl::StatusOr<pg::Result> r =
        c.Run("reading a fence back", "SELECT target FROM f2obo_fences WHERE key = $1::text",
              {Param(key)});
    if (!r.ok()) return r.status();
    return target.empty() ? r->rows() == 0 : r->rows() == 1 && r->Bytes(0, 0) == target;
  };
  return Transact("storing a fence", kNoDeadline, true, body, read_back, !target.empty());
}

}  // namespace f2obo::server
