// The PostgreSQL store's writes: each one transaction (Transact), a step a
// compare-and-set of the session's row from next step index t - 1 to t.
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

std::string Sum(absl::string_view tag, absl::string_view id, int64_t t, absl::string_view blob) {
  return Dec(RecordSum(tag, id, t, blob));
}

absl::Status Ok(const absl::StatusOr<pg::Result>& r) { return r.status(); }

// A bigint[] parameter in text form: {1,2,3}.
std::string IntArray(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

void Put32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, 4);
}

// A bytea[] parameter in PostgreSQL's binary array format (array_recv):
// dimensions, a has-nulls flag, the element type (bytea, oid 17), each
// dimension's length and lower bound, then each element's length and
// bytes, integers in network byte order.
std::string ByteaArray(const std::vector<const std::string*>& items) {
  std::string out;
  Put32(&out, items.empty() ? 0 : 1);
  Put32(&out, 0);
  Put32(&out, 17);
  if (items.empty()) return out;
  Put32(&out, static_cast<uint32_t>(items.size()));
  Put32(&out, 1);
  for (const std::string* item : items) {
    Put32(&out, static_cast<uint32_t>(item->size()));
    out.append(*item);
  }
  return out;
}

// A step of one session as one plain SQL statement, prepared once per
// connection: compare-and-set of its row from (t - 1, gen; gen NULL: not
// compared), then, only if that matched, its parts and its reply: one plan
// and one snapshot, ~40% less of the database's executor time per step
// than the same five statements run one by one in PL/pgSQL
// (bench/RESULTS.md).
// Its writes share the statement's snapshot, so each row is written by at
// most one of them: the parts removed ($7 clear: all; $8 trim: those at or
// beyond it; those given empty) never include one given with bytes, which
// is upserted instead, and the reply cache keeps the keys in
// (t - $14, t] (none when $14 <= 0).  No other server writes this
// session's parts or replies without first writing its row, which the
// UPDATE holds locked (or finds moved on: then nothing is written and no
// row returned).  $15 false commits with synchronous_commit = off.
constexpr const char* kStepSql = R"sql(
WITH u AS (
  UPDATE f2obo_sessions SET state = $4::bytea, state_sum = $5::bigint, parts = $6::bigint,
         next_t = $2::bigint, gen = nextval('f2obo_gen')
   WHERE id = $1::text AND next_t = $2::bigint - 1 AND ($3::bigint IS NULL OR gen = $3::bigint)
  RETURNING gen),
given AS (
  SELECT * FROM unnest($9::bigint[], $10::bytea[], $11::bigint[]) AS g(idx, part, part_sum)),
removed AS (
  DELETE FROM f2obo_state_parts s
   WHERE s.id = $1::text AND EXISTS (SELECT FROM u)
     AND ($7::boolean OR s.idx >= $8::bigint
          OR s.idx IN (SELECT idx FROM given WHERE length(part) = 0))
     AND s.idx NOT IN (SELECT idx FROM given WHERE length(part) > 0)),
stored AS (
  INSERT INTO f2obo_state_parts (id, idx, part, part_sum)
  SELECT $1::text, g.idx, g.part, g.part_sum FROM given g
   WHERE length(g.part) > 0 AND EXISTS (SELECT FROM u)
  ON CONFLICT (id, idx) DO UPDATE SET part = EXCLUDED.part, part_sum = EXCLUDED.part_sum),
replied AS (
  INSERT INTO f2obo_replies (id, t, reply, reply_sum)
  SELECT $1::text, $2::bigint, $12::bytea, $13::bigint FROM u WHERE $14::bigint > 0
  ON CONFLICT (id, t) DO UPDATE SET reply = EXCLUDED.reply, reply_sum = EXCLUDED.reply_sum),
forgotten AS (
  DELETE FROM f2obo_replies
   WHERE id = $1::text AND t <= $2::bigint - $14::bigint AND EXISTS (SELECT FROM u))
SELECT gen, CASE WHEN $15::boolean THEN NULL
                 ELSE set_config('synchronous_commit', 'off', true) END
  FROM u
)sql";

}  // namespace

absl::Status PostgresSessionStore::Missed(pg::Conn& c, const std::string& id, int64_t from,
                                          std::optional<int64_t> gen) {
  absl::StatusOr<pg::Result> r =
      c.Run("reading a session's step index",
            "SELECT next_t, gen FROM f2obo_sessions WHERE id = $1::text", {Param(id)});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) {
    return absl::NotFoundError(absl::StrCat("session '", id, "' is not in the store"));
  }
  if (r->Int(0, 0) == from && gen.has_value()) {
    return absl::AbortedError(absl::StrCat(
        "session '", id, "' is at step index ", from,
        " in the store, but written since this server read it (write version ", r->Int(0, 1),
        ", this copy's ", *gen, "): another server wrote it (reload it)"));
  }
  return absl::AbortedError(absl::StrCat("session '", id, "' is at step index ", r->Int(0, 0),
                                         " in the store, not ", from,
                                         ": another server wrote it (reload it)"));
}

absl::Status PostgresSessionStore::DeleteSessionRows(pg::Conn& c, const std::string& id) {
  for (const char* sql : {"DELETE FROM f2obo_sessions WHERE id = $1::text",
                          "DELETE FROM f2obo_state_parts WHERE id = $1::text",
                          "DELETE FROM f2obo_replies WHERE id = $1::text",
                          "DELETE FROM f2obo_checkpoints WHERE id = $1::text",
                          "DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text"}) {
    if (absl::Status s = Ok(c.Run("deleting a session", sql, {Param(id)})); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status PostgresSessionStore::ReplaceReplies(pg::Conn& c, const std::string& id,
                                                  const std::vector<v1::StepReply>& replies) {
  if (absl::Status s = Ok(
          c.Run("replacing replies", "DELETE FROM f2obo_replies WHERE id = $1::text", {Param(id)}));
      !s.ok()) {
    return s;
  }
  for (const v1::StepReply& reply : replies) {
    // Keyed by the step index after the reply's step, as a step's reply.
    const int64_t key = reply.t() + 1;
    const std::string bytes = reply.SerializeAsString();
    if (absl::Status s = Ok(c.Run(
            "saving a reply",
            "INSERT INTO f2obo_replies (id, t, reply, reply_sum) "
            "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint)",
            {Param(id), Param(Dec(key)), Param::Blob(bytes), Param(Sum("reply", id, key, bytes))}));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PostgresSessionStore::InsertSession(pg::Conn& c, const SessionRecord& r,
                                                 int64_t* written) {
  const std::string spec = r.spec.SerializeAsString();
  const bool in_parts = r.parts != nullptr;
  // Insert-only: of two servers creating (or importing) one id at once,
  // the second waits on the first's row and finds it taken once the
  // first commits.
  absl::StatusOr<pg::Result> inserted =
      c.Run("storing a session",
            "INSERT INTO f2obo_sessions (id, spec, spec_sum, state, state_sum, parts, next_t, gen) "
            "VALUES ($1::text, $2::bytea, $3::bigint, $4::bytea, $5::bigint, $6::bigint, "
            "$7::bigint, nextval('f2obo_gen')) ON CONFLICT (id) DO NOTHING RETURNING gen",
            {Param(r.id), Param::Blob(spec), Param(Sum("spec", r.id, 0, spec)),
             Param::Blob(r.state), Param(Sum("state", r.id, r.t, r.state)),
             in_parts ? Param(Dec(static_cast<int64_t>(r.parts->aux.size()))) : Param::Null(),
             Param(Dec(r.t))});
  if (!inserted.ok()) return inserted.status();
  if (inserted->rows() != 1) {
    return absl::AlreadyExistsError(
        absl::StrCat("session '", r.id, "' already exists (in the shared store)"));
  }
  *written = inserted->Int(0, 0);
  // Nothing of an earlier session of this id is left (a deletion removes
  // all of it); removed all the same, in case.
  for (const char* sql : {"DELETE FROM f2obo_state_parts WHERE id = $1::text",
                          "DELETE FROM f2obo_replies WHERE id = $1::text",
                          "DELETE FROM f2obo_checkpoints WHERE id = $1::text",
                          "DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text"}) {
    if (absl::Status s = Ok(c.Run("storing a session", sql, {Param(r.id)})); !s.ok()) return s;
  }
  CheckpointParts first;  // the first checkpoint, in parts: every part
  if (in_parts) {
    first.count = static_cast<int64_t>(r.parts->aux.size());
    for (size_t i = 0; i < r.parts->aux.size(); ++i) {
      if (r.parts->aux[i].size() == 0) continue;
      const int64_t idx = static_cast<int64_t>(i);
      std::string bytes = EncodeAuxPart(r.parts->aux[i]);
      if (absl::Status s = Ok(c.Run("storing a state part",
                                    "INSERT INTO f2obo_state_parts (id, idx, part, part_sum) "
                                    "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint)",
                                    {Param(r.id), Param(Dec(idx)), Param::Blob(bytes),
                                     Param(Sum("part", r.id, idx, bytes))}));
          !s.ok()) {
        return s;
      }
      if (r.checkpoint) first.rows.emplace_back(idx, std::move(bytes));
    }
  }
  if (absl::Status s = ReplaceReplies(c, r.id, r.replies); !s.ok()) return s;
  if (!r.checkpoint) return absl::OkStatus();
  if (in_parts) return InsertCheckpointParts(c, r.id, r.t, r.state, first);
  return Ok(c.Run("storing a checkpoint",
                  "INSERT INTO f2obo_checkpoints (id, t, state, state_sum, parts) "
                  "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint, NULL)",
                  {Param(r.id), Param(Dec(r.t)), Param::Blob(r.state),
                   Param(Sum("checkpoint", r.id, r.t, r.state))}));
}

absl::Status PostgresSessionStore::InsertCheckpointParts(pg::Conn& c, const std::string& id,
                                                         int64_t t, const std::string& head,
                                                         const CheckpointParts& parts) {
  if (parts.base != 0) {
    // The chain's rule (session_store.h): the base is the newest checkpoint
    // before t, and in parts.
    absl::StatusOr<pg::Result> newest =
        c.Run("reading checkpoints",
              "SELECT t, parts FROM f2obo_checkpoints WHERE id = $1::text AND t < $2::bigint "
              "ORDER BY t DESC LIMIT 1",
              {Param(id), Param(Dec(t))});
    if (!newest.ok()) return newest.status();
    if (newest->rows() == 0 || newest->Int(0, 0) != parts.base || newest->IsNull(0, 1)) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint ", t, " of session '", id, "' is in parts since checkpoint ",
                       parts.base, ", which is not the newest before it in parts"));
    }
  }
  for (const char* sql : {"DELETE FROM f2obo_checkpoints WHERE id = $1::text AND t = $2::bigint",
                          "DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text AND t = "
                          "$2::bigint"}) {
    if (absl::Status s = Ok(c.Run("replacing a checkpoint", sql, {Param(id), Param(Dec(t))}));
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Ok(c.Run("storing a checkpoint",
                                "INSERT INTO f2obo_checkpoints (id, t, state, state_sum, parts) "
                                "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint, $5::bigint)",
                                {Param(id), Param(Dec(t)), Param::Blob(head),
                                 Param(Sum("checkpoint", id, t, head)), Param(Dec(parts.count))}));
      !s.ok()) {
    return s;
  }
  for (const auto& [idx, bytes] : parts.rows) {
    if (bytes.empty() || idx >= parts.count) continue;
    if (absl::Status s =
            Ok(c.Run("storing a checkpoint part",
                     "INSERT INTO f2obo_checkpoint_parts (id, t, idx, part, part_sum) "
                     "VALUES ($1::text, $2::bigint, $3::bigint, $4::bytea, $5::bigint)",
                     {Param(id), Param(Dec(t)), Param(Dec(idx)), Param::Blob(bytes),
                      Param(Sum("checkpoint part", id, idx, bytes))}));
        !s.ok()) {
      return s;
    }
  }
  if (parts.base == 0) return absl::OkStatus();
  // The parts that did not change since the base: copied inside the
  // database, so only the changed ones crossed the network.  (Those given
  // empty are not copied: they are empty now.)
  std::string given;
  for (const auto& row : parts.rows) absl::StrAppend(&given, given.empty() ? "" : ",", row.first);
  return Ok(c.Run(
      "copying unchanged checkpoint parts",
      "INSERT INTO f2obo_checkpoint_parts (id, t, idx, part, part_sum) "
      "SELECT id, $2::bigint, idx, part, part_sum FROM f2obo_checkpoint_parts "
      "WHERE id = $1::text AND t = $3::bigint AND idx < $4::bigint "
      "AND NOT (idx = ANY (('{' || $5::text || '}')::bigint[]))",
      {Param(id), Param(Dec(t)), Param(Dec(parts.base)), Param(Dec(parts.count)), Param(given)}));
}

absl::Status PostgresSessionStore::TrimCheckpoints(pg::Conn& c, const std::string& id, int keep) {
  for (const char* sql :
       {"DELETE FROM f2obo_checkpoint_parts WHERE id = $1::text AND t < ALL (SELECT t FROM "
        "f2obo_checkpoints WHERE id = $1::text ORDER BY t DESC LIMIT $2::bigint)",
        "DELETE FROM f2obo_checkpoints WHERE id = $1::text AND t < ALL (SELECT t FROM "
        "f2obo_checkpoints WHERE id = $1::text ORDER BY t DESC LIMIT $2::bigint)"}) {
    if (absl::Status s = Ok(c.Run("trimming checkpoints", sql, {Param(id), Param(Dec(keep))}));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

bool PostgresSessionStore::OneStatement(const StepState* parts, int keep_checkpoints) {
  if (keep_checkpoints > 0) return false;
  if (parts == nullptr) return true;
  size_t bytes = 0;
  for (const auto& row : parts->aux_rows) bytes += row.second.size();
  return bytes <= kArrayBytes;
}

pg::Statement PostgresSessionStore::StepStatement(const std::string& id, int64_t t,
                                                  std::optional<int64_t> gen,
                                                  const StepState* parts, const std::string* whole,
                                                  const std::string& reply, int keep_replies,
                                                  bool sync) {
  const std::string& head = parts != nullptr ? parts->head : *whole;
  // The changed parts go with the row in one statement (kStepSql) unless
  // they are large: then one statement each, after it (StepRows).
  const bool in_arrays = OneStatement(parts, 0);
  std::vector<int64_t> idx, sums;
  std::vector<const std::string*> bytes;
  if (parts != nullptr && in_arrays) {
    for (const auto& [i, b] : parts->aux_rows) {
      idx.push_back(i);
      bytes.push_back(&b);
      sums.push_back(RecordSum("part", id, i, b));
    }
  }
  const bool clear = parts == nullptr || parts->complete;
  const bool trim = !clear && parts->trim;
  pg::Statement st;
  st.sql = kStepSql;
  st.Text(id);
  st.Text(Dec(t));
  gen.has_value() ? st.Text(Dec(*gen)) : st.Null();
  st.Blob(head);
  st.Text(Sum("state", id, t, head));
  parts != nullptr ? st.Text(Dec(parts->aux_count)) : st.Null();
  st.Text(clear ? "t" : "f");
  trim ? st.Text(Dec(parts->aux_count)) : st.Null();
  st.Text(IntArray(idx));
  st.Blob(ByteaArray(bytes));
  st.Text(IntArray(sums));
  st.Blob(reply);
  st.Text(Sum("reply", id, t, reply));
  st.Text(Dec(keep_replies));
  st.Text(sync ? "t" : "f");
  return st;
}

absl::Status PostgresSessionStore::StepMoved(pg::Conn& c, const pg::Result& r,
                                             const std::string& id, int64_t t,
                                             std::optional<int64_t> gen, int64_t* written) {
  if (r.rows() != 1 || r.IsNull(0, 0)) return Missed(c, id, t - 1, gen);
  *written = r.Int(0, 0);
  return absl::OkStatus();
}

absl::Status PostgresSessionStore::StepRows(pg::Conn& c, const std::string& id, int64_t t,
                                            std::optional<int64_t> gen, const StepState* parts,
                                            const std::string* whole, const std::string& reply,
                                            int keep_replies, int keep_checkpoints, bool sync,
                                            int64_t* written) {
  const bool in_arrays = OneStatement(parts, 0);
  absl::StatusOr<pg::Result> moved =
      c.Run("storing a step", StepStatement(id, t, gen, parts, whole, reply, keep_replies, sync));
  if (!moved.ok()) return moved.status();
  if (absl::Status s = StepMoved(c, *moved, id, t, gen, written); !s.ok()) return s;
  if (parts != nullptr && !in_arrays) {
    for (const auto& [i, b] : parts->aux_rows) {
      absl::StatusOr<pg::Result> r =
          b.empty()
              ? c.Run("storing a step",
                      "DELETE FROM f2obo_state_parts WHERE id = $1::text AND idx = $2::bigint",
                      {Param(id), Param(Dec(i))})
              : c.Run("storing a step",
                      "INSERT INTO f2obo_state_parts (id, idx, part, part_sum) "
                      "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint) ON CONFLICT (id, idx) "
                      "DO UPDATE SET part = EXCLUDED.part, part_sum = EXCLUDED.part_sum",
                      {Param(id), Param(Dec(i)), Param::Blob(b), Param(Sum("part", id, i, b))});
      if (!r.ok()) return r.status();
    }
  }
  if (keep_checkpoints <= 0) return absl::OkStatus();
  absl::Status s;
  if (parts != nullptr && parts->checkpoint_in_parts) {
    s = InsertCheckpointParts(c, id, t, parts->head, parts->checkpoint);
  } else {
    const std::string& full = parts != nullptr ? parts->full : *whole;
    if (full.empty()) return absl::OkStatus();
    s = PutCheckpointRow(c, id, t, full);
  }
  if (!s.ok()) return s;
  return TrimCheckpoints(c, id, keep_checkpoints);
}

}  // namespace f2obo::server
