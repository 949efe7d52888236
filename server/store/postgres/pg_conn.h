// One libpq connection of the PostgreSQL store: statements prepared once
// per connection and run with binary results, libpq's failures as
// absl::Status (store_errors.h's codes), and whether the connection broke.
//
// Thread-safety: not thread-safe; the store's pool lends a connection to
// one thread at a time.
#ifndef F2OBO_SERVER_STORE_POSTGRES_PG_CONN_H_
#define F2OBO_SERVER_STORE_POSTGRES_PG_CONN_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace f2obo::server::pg {

// A statement's result rows (binary format: bigint columns as 8 bytes,
// big-endian; text and bytea as their bytes).
class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Result& operator=(Result&&) = delete;
  ~Result();
  int rows() const;
  int64_t affected() const;  // rows an UPDATE/DELETE/INSERT touched
  bool IsNull(int row, int col) const;
  int64_t Int(int row, int col) const;  // a bigint column
  absl::string_view Bytes(int row, int col) const;

 private:
  PGresult* r_;
};

// A statement parameter: text (ids, numbers as decimal), binary (bytea) or
// NULL.
struct Param {
  Param(absl::string_view text) : bytes(text) {}   // NOLINT: implicit by design
  Param(const std::string& text) : bytes(text) {}  // NOLINT
  Param(const char* text) : bytes(text) {}         // NOLINT
  static Param Blob(absl::string_view b) {
    Param p(b);
    p.binary = true;
    return p;
  }
  static Param Null() {
    Param p(absl::string_view{});
    p.null = true;
    return p;
  }
  absl::string_view bytes;
  bool binary = false;
  bool null = false;
};

// A statement with parameters of its own (Param only views them), for
// Conn::RunPipeline: the caller keeps it alive while it runs.
struct Statement {
  const char* sql = nullptr;
  void Text(std::string v) { Add(std::move(v), false, false); }
  void Blob(std::string v) { Add(std::move(v), true, false); }
  void Null() { Add(std::string(), false, true); }
  // The bytes of the parameters, what Run's limits are judged by.
  size_t bytes() const { return bytes_; }

  struct Value {
    std::string bytes;
    bool binary;
    bool null;
  };
  std::vector<Value> values;

 private:
  void Add(std::string v, bool binary, bool null) {
    bytes_ += v.size();
    values.push_back(Value{std::move(v), binary, null});
  }
  size_t bytes_ = 0;
};

class Conn {
 public:
  // Connects to `uri` (a libpq URI or conninfo; multi-host and
  // target_session_attrs as libpq reads them; a password from it, from
  // PGPASSWORD or from a passfile).  UNAVAILABLE naming what libpq said
  // (libpq's messages never hold the password).
  static absl::StatusOr<std::unique_ptr<Conn>> Connect(const std::string& uri);
  ~Conn();
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // Runs `sql` (prepared on this connection at its first use) with
  // `params` ($1, $2, ...); `what` names it in errors.
  absl::StatusOr<Result> Run(absl::string_view what, const char* sql,
                             std::initializer_list<Param> params = {});
  absl::StatusOr<Result> Run(absl::string_view what, const Statement& statement);
  // Runs `batch` in pipeline mode: every statement sent, then one Sync, so
  // they are one transaction (committed on its own at the Sync, one round
  // trip and one commit for them all).  Each one's rows, in order; if one
  // fails, none is committed and its error is returned (broken(): the
  // outcome is unknown, the connection broke).
  absl::StatusOr<std::vector<Result>> RunPipeline(absl::string_view what,
                                                  const std::vector<const Statement*>& batch);
  // Runs `sql` unprepared, with no parameters (BEGIN, COMMIT, DDL).
  absl::StatusOr<Result> Exec(absl::string_view what, const char* sql);
  // Whether the connection is gone (the server died, the network broke):
  // a new one must be made.
  bool broken() const;
  // host:port of the server it is connected to.
  std::string server() const;

 private:
  explicit Conn(PGconn* c) : c_(c) {}
  absl::Status Check(absl::string_view what, PGresult* r) const;
  // The name of `sql` prepared on this connection (prepared now if new).
  absl::StatusOr<const std::string*> Prepared(absl::string_view what, const char* sql);
  // Runs prepared statement `sql` with `params` (no pipeline).
  absl::StatusOr<Result> RunParams(absl::string_view what, const char* sql,
                                   const std::vector<Param>& params);

  PGconn* c_;
  std::unordered_map<const char*, std::string> prepared_;  // sql -> statement name
};

// What a store failure is, by PostgreSQL's SQLSTATE (or a broken
// connection): UNAVAILABLE for what a retry may cure (the connection,
// a server shutting down or in recovery, a read-only standby, a
// serialization failure), RESOURCE_EXHAUSTED for a full disk or a value
// past PostgreSQL's limits, INTERNAL otherwise.
absl::StatusCode CodeOfSqlState(absl::string_view sqlstate);

}  // namespace f2obo::server::pg

#endif  // F2OBO_SERVER_STORE_POSTGRES_PG_CONN_H_
