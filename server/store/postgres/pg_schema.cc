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

// Version 2 over version 1: the write versions.  Old rows get version 0;
// every write from now on a new value.  (Development builds before the
// step became a statement of the server's own, postgres_store_writes.cc,
// also created a PL/pgSQL function f2obo_step() here; no release called
// it, and databases they migrated keep it, unused.)
constexpr const char* kVersion2Sql = R"sql(
CREATE SEQUENCE f2obo_gen;
ALTER TABLE f2obo_sessions ADD COLUMN gen bigint NOT NULL DEFAULT 0;
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
