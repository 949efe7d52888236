#include "server/store/postgres/pg_schema.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace f2obo::server::pg {

namespace {

// Serializes schema creation among servers opening one database at once.
constexpr const char* kSchemaLockSql = "SELECT pg_advisory_xact_lock(7318902245)";

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE f2obo_schema (version integer NOT NULL);
CREATE TABLE f2obo_sessions (
  id text PRIMARY KEY, spec bytea NOT NULL, spec_sum bigint NOT NULL,
  state bytea NOT NULL, state_sum bigint NOT NULL,
  parts bigint,  -- the state's aux part count (state is its head); NULL: state is whole
  next_t bigint NOT NULL);
CREATE TABLE f2obo_state_parts (
  id text NOT NULL, idx bigint NOT NULL, part bytea NOT NULL, part_sum bigint NOT NULL,
  PRIMARY KEY (id, idx));
CREATE TABLE f2obo_replies (
  id text NOT NULL, t bigint NOT NULL, reply bytea NOT NULL, reply_sum bigint NOT NULL,
  PRIMARY KEY (id, t));
CREATE TABLE f2obo_checkpoints (
  id text NOT NULL, t bigint NOT NULL, state bytea NOT NULL, state_sum bigint NOT NULL,
  parts bigint,  -- as f2obo_sessions.parts
  PRIMARY KEY (id, t));
CREATE TABLE f2obo_checkpoint_parts (
  id text NOT NULL, t bigint NOT NULL, idx bigint NOT NULL, part bytea NOT NULL,
  part_sum bigint NOT NULL, PRIMARY KEY (id, t, idx));
CREATE TABLE f2obo_groups (
  id text PRIMARY KEY, members bytea NOT NULL, members_sum bigint NOT NULL);
CREATE TABLE f2obo_fences (
  key text PRIMARY KEY, target text NOT NULL, target_sum bigint NOT NULL);
)sql";

// Version 2 over version 1: the write versions and the step as one
// statement.  Old rows get version 0; every write from now on a new value.
constexpr const char* kVersion2Sql = R"sql(
CREATE SEQUENCE f2obo_gen;
ALTER TABLE f2obo_sessions ADD COLUMN gen bigint NOT NULL DEFAULT 0;
-- A step of one session, compare-and-set from (p_t - 1, p_gen; p_gen NULL:
-- not compared): its row, its parts (p_clear: every stored part removed
-- first; p_trim_from: those at or beyond it; then each of p_idx stored, or
-- removed if its bytes are empty), its reply (the cache keeps the keys in
-- (p_t - p_keep_replies, p_t]).  Returns the new write version, NULL if the
-- session is not stored at (p_t - 1, p_gen) (nothing written).
CREATE FUNCTION f2obo_step(p_id text, p_t bigint, p_gen bigint, p_head bytea, p_head_sum bigint,
    p_parts bigint, p_clear boolean, p_trim_from bigint, p_idx bigint[], p_part bytea[],
    p_part_sum bigint[], p_reply bytea, p_reply_sum bigint, p_keep_replies bigint,
    p_sync boolean) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
  g bigint;
BEGIN
  IF NOT p_sync THEN
    PERFORM set_config('synchronous_commit', 'off', true);
  END IF;
  UPDATE f2obo_sessions SET state = p_head, state_sum = p_head_sum, parts = p_parts,
         next_t = p_t, gen = nextval('f2obo_gen')
   WHERE id = p_id AND next_t = p_t - 1 AND (p_gen IS NULL OR gen = p_gen)
  RETURNING gen INTO g;
  IF g IS NULL THEN
    RETURN NULL;
  END IF;
  IF p_clear THEN
    DELETE FROM f2obo_state_parts WHERE id = p_id;
  ELSIF p_trim_from IS NOT NULL THEN
    DELETE FROM f2obo_state_parts WHERE id = p_id AND idx >= p_trim_from;
  END IF;
  IF cardinality(p_idx) > 0 THEN
    DELETE FROM f2obo_state_parts s USING unnest(p_idx, p_part) AS u(idx, part)
     WHERE s.id = p_id AND s.idx = u.idx AND length(u.part) = 0;
    INSERT INTO f2obo_state_parts (id, idx, part, part_sum)
    SELECT p_id, u.idx, u.part, u.part_sum
      FROM unnest(p_idx, p_part, p_part_sum) AS u(idx, part, part_sum)
     WHERE length(u.part) > 0
    ON CONFLICT (id, idx) DO UPDATE SET part = EXCLUDED.part, part_sum = EXCLUDED.part_sum;
  END IF;
  INSERT INTO f2obo_replies (id, t, reply, reply_sum) VALUES (p_id, p_t, p_reply, p_reply_sum)
  ON CONFLICT (id, t) DO UPDATE SET reply = EXCLUDED.reply, reply_sum = EXCLUDED.reply_sum;
  DELETE FROM f2obo_replies WHERE id = p_id AND t <= p_t - p_keep_replies;
  RETURN g;
END $f$;
)sql";

}  // namespace

absl::Status Schema::Open(Conn& c) {
  const auto fail = [&](absl::Status s) {
    (void)c.Exec("rolling back", "ROLLBACK");
    return s;
  };
  for (const char* sql : {"BEGIN", kSchemaLockSql}) {
    if (absl::StatusOr<Result> r = c.Exec("opening the schema", sql); !r.ok()) {
      return fail(r.status());
    }
  }
  absl::StatusOr<Result> exists = c.Run(
      "reading the schema version", "SELECT (to_regclass('f2obo_schema') IS NOT NULL)::int::int8");
  if (!exists.ok()) return fail(exists.status());
  if (exists->Int(0, 0) == 1) {
    absl::StatusOr<Result> v =
        c.Run("reading the schema version", "SELECT max(version)::bigint FROM f2obo_schema");
    if (!v.ok()) return fail(v.status());
    const int64_t version = v->rows() > 0 && !v->IsNull(0, 0) ? v->Int(0, 0) : 0;
    if (version > kVersion) {
      return fail(absl::FailedPreconditionError(
          absl::StrCat("the PostgreSQL store (", c.server(), ") holds schema version ", version,
                       ", written by a newer f2obo-server; this one reads up to version ", kVersion,
                       ": upgrade the server (nothing was written)")));
    }
    if (version < 1) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "the PostgreSQL store (", c.server(), ") has table f2obo_schema without a version")));
    }
    if (absl::Status s = Migrate(c, version); !s.ok()) return fail(s);
    return c.Exec("closing the schema", "COMMIT").status();
  }
  // A new database: version 1's tables, migrated as an old one is (one
  // path to the current schema).
  if (absl::StatusOr<Result> r = c.Exec("creating the schema", kSchemaSql); !r.ok()) {
    return fail(r.status());
  }
  if (absl::StatusOr<Result> r =
          c.Exec("creating the schema", "INSERT INTO f2obo_schema (version) VALUES (1)");
      !r.ok()) {
    return fail(r.status());
  }
  if (absl::Status s = Migrate(c, 1); !s.ok()) return fail(s);
  return c.Exec("creating the schema", "COMMIT").status();
}

absl::Status Schema::Migrate(Conn& c, int64_t version) {
  if (version >= kVersion) return absl::OkStatus();
  if (version < 2) {
    if (absl::StatusOr<Result> r = c.Exec("migrating the schema to version 2", kVersion2Sql);
        !r.ok()) {
      return r.status();
    }
  }
  const std::string set = absl::StrCat("UPDATE f2obo_schema SET version = ", kVersion);
  return c.Exec("migrating the schema", set.c_str()).status();
}

}  // namespace f2obo::server::pg
