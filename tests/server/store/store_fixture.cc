#include "tests/server/store/store_fixture.h"

#include <sqlite3.h>

#include "core/state.h"

namespace f2obo::server {

// A state whose bytes depend on (t, seed), `n` numbers long.
std::string StateBytes(int64_t t, double seed, int n) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(n, seed + static_cast<double>(t));
  s.vectors = {Vector::Constant(3, -seed), Vector::Constant(3, seed)};
  s.scalars = {0.5 * static_cast<double>(t)};
  return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
}

v1::SessionSpec SpecFor(const std::string& id) {
  v1::SessionSpec spec;
  spec.set_algorithm("f2obo");
  spec.mutable_family()->set_name("quadratic");  // any bytes will do here
  spec.add_x0(static_cast<double>(id.size()));
  return spec;
}

v1::StepReply ReplyFor(const std::string& id, int64_t t) {
  v1::StepReply r;
  r.set_session_id(id);
  r.set_t(t);
  r.add_x(static_cast<double>(t) / 3.0);
  return r;
}

// Three sessions, a, b and c, each created then stepped kSteps times, and
// a group of all three.
std::map<std::string, Expected> WriteThree(const std::string& dir, Durability durability) {
  std::map<std::string, Expected> expected;
  auto store = SqliteSessionStore::Open(dir, durability);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return expected;
  double seed = 1;
  for (const std::string id : {"a", "b", "c"}) {
    Expected& e = expected[id];
    e.spec = SpecFor(id).SerializeAsString();
    EXPECT_TRUE((*store)->PutSession(id, SpecFor(id), StateBytes(1, seed), 1).ok());
    for (int64_t t = 1; t <= kSteps; ++t) {
      e.state = StateBytes(t + 1, seed);
      EXPECT_TRUE((*store)->CommitStep(id, t + 1, e.state, ReplyFor(id, t), kKeep).ok());
      if (t > kSteps - kKeep) e.replies.push_back(ReplyFor(id, t).SerializeAsString());
    }
    seed += 10;
  }
  EXPECT_TRUE((*store)->PutGroup("g", {"a", "b", "c"}).ok());
  return expected;
}

LoadedStore Reload(const std::string& dir) {
  auto store = SqliteSessionStore::Open(dir, Durability::kSync);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  auto loaded = (*store)->LoadAll();
  EXPECT_TRUE(loaded.ok()) << loaded.status();
  return loaded.ok() ? *std::move(loaded) : LoadedStore{};
}

// Every loaded session is bit-exact what was written; returns their ids.
std::vector<std::string> CheckLoadedExactly(const LoadedStore& loaded,
                                            const std::map<std::string, Expected>& expected) {
  std::vector<std::string> ids;
  for (const StoredSession& s : loaded.sessions) {
    ids.push_back(s.id);
    const Expected& e = expected.at(s.id);
    EXPECT_EQ(s.spec.SerializeAsString(), e.spec) << s.id;
    EXPECT_EQ(SerializeCheckpoint(s.state), e.state) << s.id;
    std::vector<std::string> replies;
    for (const v1::StepReply& r : s.replies) replies.push_back(r.SerializeAsString());
    EXPECT_EQ(replies, e.replies) << s.id;
  }
  return ids;
}

std::string DbPath(const std::string& dir) { return dir + "/f2obo.sqlite3"; }

void Sql(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << sql << ": " << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// Inverts the bits of byte `offset` of `column` in the row `where` selects,
// with raw SQLite (as a bad sector or a stray write would).
void FlipByte(const std::string& db_path, const std::string& table, const std::string& column,
              const std::string& where, size_t offset) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* read = nullptr;
  const std::string select = "SELECT " + column + " FROM " + table + " WHERE " + where;
  ASSERT_EQ(sqlite3_prepare_v2(db, select.c_str(), -1, &read, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(read), SQLITE_ROW) << select;
  std::string bytes(static_cast<const char*>(sqlite3_column_blob(read, 0)),
                    sqlite3_column_bytes(read, 0));
  const bool is_text = sqlite3_column_type(read, 0) == SQLITE_TEXT;
  sqlite3_finalize(read);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(~bytes[offset]);
  sqlite3_stmt* write = nullptr;
  const std::string update = "UPDATE " + table + " SET " + column + " = ? WHERE " + where;
  ASSERT_EQ(sqlite3_prepare_v2(db, update.c_str(), -1, &write, nullptr), SQLITE_OK);
  if (is_text) {
    sqlite3_bind_text(write, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_blob(write, 1, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
  }
  ASSERT_EQ(sqlite3_step(write), SQLITE_DONE);
  ASSERT_EQ(sqlite3_changes(db), 1);
  sqlite3_finalize(write);
  sqlite3_close(db);
}

}  // namespace f2obo::server
