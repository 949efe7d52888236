#include "server/store/session_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/state.h"

namespace f2obo::server {

struct SessionStore::Write {
  enum Kind { kPut, kDelete, kStep, kGroup, kDeleteGroup } kind;
  std::string id;
  std::string spec;   // kPut; kGroup, kDeleteGroup: member ids, one a line
  std::string state;  // kPut, kStep
  int64_t t = 0;      // kPut, kStep
  std::string reply;  // kStep
  std::vector<std::pair<int64_t, std::string>> replies;  // kPut
  int keep = 0;       // kStep
  bool done = false;
  absl::Status status;
};

namespace {

// RAII prepared statement.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Text(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Blob(int i, const std::string& v) {
    sqlite3_bind_blob(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  Stmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  int Step() { return sqlite3_step(stmt_); }
  std::string Column(int i) const {
    const void* p = sqlite3_column_blob(stmt_, i);
    return std::string(static_cast<const char*>(p), sqlite3_column_bytes(stmt_, i));
  }
  absl::Status Error(const char* what) const {
    return absl::InternalError(absl::StrCat("store: ", what, ": ", sqlite3_errmsg(db_)));
  }
  absl::Status Run(const char* what) {
    if (!ok()) return Error(what);
    const int rc = Step();
    return rc == SQLITE_DONE || rc == SQLITE_ROW ? absl::OkStatus() : Error(what);
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SessionStore>> SessionStore::Open(const std::string& dir,
                                                                 Durability durability) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::FailedPreconditionError(
        absl::StrCat("--data_dir: cannot create ", dir, ": ", std::strerror(errno)));
  }
  const std::string path = dir + "/f2obo.sqlite3";
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return absl::FailedPreconditionError(absl::StrCat("store: cannot open ", path, ": ", msg));
  }
  std::unique_ptr<SessionStore> store(new SessionStore(db, path, durability));
  const char* setup[] = {
      "PRAGMA journal_mode=WAL",
      durability == Durability::kSync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF",
      "CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, spec BLOB NOT NULL, "
      "state BLOB NOT NULL, t INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS replies (id TEXT NOT NULL, t INTEGER NOT NULL, "
      "reply BLOB NOT NULL, PRIMARY KEY (id, t))",
      "CREATE TABLE IF NOT EXISTS groups (id TEXT PRIMARY KEY, members TEXT NOT NULL)",
  };
  for (const char* sql : setup) {
    if (absl::Status s = store->Exec(sql); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(path, ": ", s.message()));
    }
  }
  store->writer_ = std::thread([s = store.get()] { s->WriterLoop(); });
  return store;
}

SessionStore::SessionStore(sqlite3* db, std::string path, Durability durability)
    : db_(db), path_(std::move(path)), durability_(durability) {}

SessionStore::~SessionStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();  // drains the queue first
  sqlite3_close(db_);
}

absl::Status SessionStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    absl::Status s = absl::InternalError(absl::StrCat("store: ", sql, ": ", err ? err : "?"));
    sqlite3_free(err);
    return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedStore> SessionStore::LoadAll() {
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
    StoredSession s;
    s.id = id;
    Stmt row(db_, "SELECT spec, state FROM sessions WHERE id = ?");
    if (!row.ok() || row.Text(1, id).Step() != SQLITE_ROW) {
      out.damaged.push_back(absl::StrCat("session '", id, "': unreadable row (",
                                         sqlite3_errmsg(db_), ")"));
      continue;
    }
    if (!s.spec.ParseFromString(row.Column(0))) {
      out.damaged.push_back(absl::StrCat("session '", id, "': spec does not parse"));
      continue;
    }
    s.state = row.Column(1);
    if (absl::StatusOr<SessionState> st = DeserializeState(s.state); !st.ok()) {
      out.damaged.push_back(absl::StrCat("session '", id, "': ", st.status().message()));
      continue;
    }
    Stmt replies(db_, "SELECT reply FROM replies WHERE id = ? ORDER BY t");
    if (!replies.ok()) return replies.Error("reading replies");
    replies.Text(1, id);
    int rc;
    bool bad = false;
    while ((rc = replies.Step()) == SQLITE_ROW) {
      v1::StepReply r;
      bad = bad || !r.ParseFromString(replies.Column(0));
      s.replies.push_back(std::move(r));
    }
    if (bad || rc != SQLITE_DONE) {
      out.damaged.push_back(absl::StrCat("session '", id, "': reply cache unreadable"));
      continue;
    }
    out.sessions.push_back(std::move(s));
  }
  Stmt groups(db_, "SELECT id, members FROM groups ORDER BY id");
  if (!groups.ok()) return groups.Error("listing groups");
  int rc;
  while ((rc = groups.Step()) == SQLITE_ROW) {
    StoredGroup g;
    g.id = groups.Column(0);
    for (absl::string_view m : absl::StrSplit(groups.Column(1), '\n', absl::SkipEmpty())) {
      g.members.emplace_back(m);
    }
    out.groups.push_back(std::move(g));
  }
  if (rc != SQLITE_DONE) out.damaged.push_back("groups: unreadable");
  return out;
}

absl::Status SessionStore::PutGroup(const std::string& id,
                                    const std::vector<std::string>& members) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kGroup;
  w->id = id;
  w->spec = absl::StrJoin(members, "\n");
  return Submit(std::move(w), /*wait=*/true);
}

absl::Status SessionStore::DeleteGroup(const std::string& id,
                                       const std::vector<std::string>& members) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kDeleteGroup;
  w->id = id;
  w->spec = absl::StrJoin(members, "\n");
  return Submit(std::move(w), /*wait=*/true);
}

absl::Status SessionStore::PutSession(const std::string& id, const v1::SessionSpec& spec,
                                      const std::string& state, int64_t t,
                                      const std::vector<v1::StepReply>& replies) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kPut;
  w->id = id;
  w->spec = spec.SerializeAsString();
  w->state = state;
  w->t = t;
  for (const v1::StepReply& r : replies) w->replies.emplace_back(r.t(), r.SerializeAsString());
  return Submit(std::move(w), /*wait=*/true);
}

absl::Status SessionStore::DeleteSession(const std::string& id) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kDelete;
  w->id = id;
  return Submit(std::move(w), /*wait=*/true);
}

absl::Status SessionStore::CommitStep(const std::string& id, int64_t t, std::string state,
                                      const v1::StepReply& reply, int keep_replies) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kStep;
  w->id = id;
  w->t = t;
  w->state = std::move(state);
  w->reply = reply.SerializeAsString();
  w->keep = keep_replies;
  return Submit(std::move(w), /*wait=*/durability_ == Durability::kSync);
}

absl::Status SessionStore::Submit(std::shared_ptr<Write> w, bool wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) return absl::UnavailableError("store: shutting down");
  queue_.push_back(w);
  cv_.notify_all();
  if (!wait) return absl::OkStatus();
  cv_.wait(lock, [&] { return w->done; });
  return w->status;
}

absl::Status SessionStore::DeleteSessionRows(const std::string& id) {
  Stmt a(db_, "DELETE FROM sessions WHERE id = ?");
  if (absl::Status s = a.Text(1, id).Run("deleting a session"); !s.ok()) return s;
  Stmt b(db_, "DELETE FROM replies WHERE id = ?");
  return b.Text(1, id).Run("deleting replies");
}

absl::Status SessionStore::Apply(const Write& w) {
  switch (w.kind) {
    case Write::kPut: {
      Stmt s(db_, "INSERT OR REPLACE INTO sessions (id, spec, state, t) VALUES (?, ?, ?, ?)");
      if (absl::Status st = s.Text(1, w.id).Blob(2, w.spec).Blob(3, w.state).Int(4, w.t).Run(
              "saving a session");
          !st.ok()) {
        return st;
      }
      Stmt clear(db_, "DELETE FROM replies WHERE id = ?");
      if (absl::Status st = clear.Text(1, w.id).Run("clearing replies"); !st.ok()) return st;
      for (const auto& [t, reply] : w.replies) {
        Stmt r(db_, "INSERT INTO replies (id, t, reply) VALUES (?, ?, ?)");
        if (absl::Status st = r.Text(1, w.id).Int(2, t).Blob(3, reply).Run("saving a reply");
            !st.ok()) {
          return st;
        }
      }
      return absl::OkStatus();
    }
    case Write::kGroup: {
      Stmt g(db_, "INSERT OR REPLACE INTO groups (id, members) VALUES (?, ?)");
      return g.Text(1, w.id).Text(2, w.spec).Run("saving a group");
    }
    case Write::kDelete:
      return DeleteSessionRows(w.id);
    case Write::kDeleteGroup: {
      // One Write is applied inside one transaction (see WriterLoop).
      for (absl::string_view m : absl::StrSplit(w.spec, '\n', absl::SkipEmpty())) {
        if (absl::Status s = DeleteSessionRows(std::string(m)); !s.ok()) return s;
      }
      Stmt g(db_, "DELETE FROM groups WHERE id = ?");
      return g.Text(1, w.id).Run("deleting a group");
    }
    case Write::kStep: {
      Stmt a(db_, "UPDATE sessions SET state = ?, t = ? WHERE id = ?");
      if (absl::Status s = a.Blob(1, w.state).Int(2, w.t).Text(3, w.id).Run("saving a step");
          !s.ok()) {
        return s;
      }
      if (sqlite3_changes(db_) != 1) {
        return absl::NotFoundError(absl::StrCat("store: session '", w.id, "' not stored"));
      }
      Stmt b(db_, "INSERT OR REPLACE INTO replies (id, t, reply) VALUES (?, ?, ?)");
      if (absl::Status s = b.Text(1, w.id).Int(2, w.t).Blob(3, w.reply).Run("saving a reply");
          !s.ok()) {
        return s;
      }
      Stmt c(db_, "DELETE FROM replies WHERE id = ? AND t <= ?");
      return c.Text(1, w.id).Int(2, w.t - w.keep).Run("trimming replies");
    }
  }
  return absl::InternalError("store: unknown write");
}

void SessionStore::WriterLoop() {
  for (;;) {
    std::deque<std::shared_ptr<Write>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and drained
      batch.swap(queue_);
    }
    // Group commit: one transaction (one fsync) for everything pending.
    bool batch_ok = Exec("BEGIN IMMEDIATE").ok();
    for (const auto& w : batch) {
      if (!batch_ok) break;
      w->status = Apply(*w);
      batch_ok = w->status.ok();
    }
    if (batch_ok) batch_ok = Exec("COMMIT").ok();
    if (!batch_ok) {
      // Something failed: undo, then give each write its own transaction so
      // one bad write cannot fail its neighbours.
      Exec("ROLLBACK").IgnoreError();
      for (const auto& w : batch) {
        absl::Status s = Exec("BEGIN IMMEDIATE");
        if (s.ok()) s = Apply(*w);
        if (s.ok()) s = Exec("COMMIT");
        if (!s.ok()) Exec("ROLLBACK").IgnoreError();
        w->status = s;
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& w : batch) w->done = true;
    }
    cv_.notify_all();
  }
}

}  // namespace f2obo::server
