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

// Why a compare-and-set from `from` matched no row: the session is not
// stored (NOT_FOUND) or is at another step index (ABORTED: another server
// committed; the caller reloads it and answers from what is stored).
absl::Status Missed(pg::Conn& c, const std::string& id, int64_t from) {
  absl::StatusOr<pg::Result> r =
      c.Run("reading a session's step index",
            "SELECT next_t FROM f2obo_sessions WHERE id = $1::text", {Param(id)});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) {
    return absl::NotFoundError(absl::StrCat("session '", id, "' is not in the store"));
  }
  return absl::AbortedError(absl::StrCat("session '", id, "' is at step index ", r->Int(0, 0),
                                         " in the store, not ", from,
                                         ": another server wrote it (reload it)"));
}

absl::Status Ok(const absl::StatusOr<pg::Result>& r) { return r.status(); }

}  // namespace

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

absl::Status PostgresSessionStore::InsertSession(pg::Conn& c, const SessionRecord& r) {
  if (absl::Status s = DeleteSessionRows(c, r.id); !s.ok()) return s;
  const std::string spec = r.spec.SerializeAsString();
  const bool in_parts = r.parts != nullptr;
  if (absl::Status s = Ok(
          c.Run("storing a session",
                "INSERT INTO f2obo_sessions (id, spec, spec_sum, state, state_sum, parts, next_t) "
                "VALUES ($1::text, $2::bytea, $3::bigint, $4::bytea, $5::bigint, $6::bigint, "
                "$7::bigint)",
                {Param(r.id), Param::Blob(spec), Param(Sum("spec", r.id, 0, spec)),
                 Param::Blob(r.state), Param(Sum("state", r.id, r.t, r.state)),
                 in_parts ? Param(Dec(static_cast<int64_t>(r.parts->aux.size()))) : Param::Null(),
                 Param(Dec(r.t))}));
      !s.ok()) {
    return s;
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

absl::Status PostgresSessionStore::StepRows(pg::Conn& c, const std::string& id, int64_t t,
                                            const StepState* parts, const std::string* whole,
                                            const std::string& reply, int keep_replies,
                                            int keep_checkpoints) {
  const std::string& head = parts != nullptr ? parts->head : *whole;
  absl::StatusOr<pg::Result> moved = c.Run(
      "storing a step",
      "UPDATE f2obo_sessions SET state = $3::bytea, state_sum = $4::bigint, parts = $5::bigint, "
      "next_t = $2::bigint WHERE id = $1::text AND next_t = $6::bigint",
      {Param(id), Param(Dec(t)), Param::Blob(head), Param(Sum("state", id, t, head)),
       parts != nullptr ? Param(Dec(parts->aux_count)) : Param::Null(), Param(Dec(t - 1))});
  if (!moved.ok()) return moved.status();
  if (moved->affected() != 1) return Missed(c, id, t - 1);
  if (parts == nullptr || parts->complete) {
    if (absl::Status s = Ok(c.Run(
            "storing a step", "DELETE FROM f2obo_state_parts WHERE id = $1::text", {Param(id)}));
        !s.ok()) {
      return s;
    }
  } else if (parts->trim) {
    if (absl::Status s =
            Ok(c.Run("storing a step",
                     "DELETE FROM f2obo_state_parts WHERE id = $1::text AND idx >= $2::bigint",
                     {Param(id), Param(Dec(parts->aux_count))}));
        !s.ok()) {
      return s;
    }
  }
  if (parts != nullptr) {
    for (const auto& [idx, bytes] : parts->aux_rows) {
      absl::StatusOr<pg::Result> r =
          bytes.empty()
              ? c.Run("storing a step",
                      "DELETE FROM f2obo_state_parts WHERE id = $1::text AND idx = $2::bigint",
                      {Param(id), Param(Dec(idx))})
              : c.Run("storing a step",
                      "INSERT INTO f2obo_state_parts (id, idx, part, part_sum) "
                      "VALUES ($1::text, $2::bigint, $3::bytea, $4::bigint) ON CONFLICT (id, idx) "
                      "DO UPDATE SET part = EXCLUDED.part, part_sum = EXCLUDED.part_sum",
                      {Param(id), Param(Dec(idx)), Param::Blob(bytes),
                       Param(Sum("part", id, idx, bytes))});
      if (!r.ok()) return r.status();
    }
  }
  // The reply, keyed by t; the cache keeps the keys in (t - keep, t].
  if (absl::Status s = Ok(
          c.Run("storing a step's reply",
                "INSERT INTO f2obo_replies (id, t, reply, reply_sum) VALUES ($1::text, $2::bigint, "
                "$3::bytea, $4::bigint) ON CONFLICT (id, t) DO UPDATE SET reply = EXCLUDED.reply, "
                "reply_sum = EXCLUDED.reply_sum",
                {Param(id), Param(Dec(t)), Param::Blob(reply), Param(Sum("reply", id, t, reply))}));
      !s.ok()) {
    return s;
  }
  if (absl::Status s = Ok(c.Run("trimming replies",
                                "DELETE FROM f2obo_replies WHERE id = $1::text AND t <= $2::bigint",
                                {Param(id), Param(Dec(t - keep_replies))}));
      !s.ok()) {
    return s;
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
