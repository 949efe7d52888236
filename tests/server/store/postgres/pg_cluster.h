// A throwaway PostgreSQL for tests: the tests start their own server (or a
// primary with a synchronous standby), on a free loopback port, in a
// temporary directory, with fsync on, and tear it down at the end.
//
// The binaries (initdb, pg_ctl, pg_basebackup) are found through
// `pg_config --bindir` (F2OBO_PG_BINDIR overrides it), never at a path of
// this machine's.  PostgreSQL refuses to run as root: under root the
// cluster's files and processes belong to the `postgres` user (or `nobody`
// where there is none).
//
// Authentication is real: connections over TCP need the cluster's password
// (scram-sha-256), so the tests of a wrong password and of a password kept
// out of logs have something to test.
//
// Thread-safety: not thread-safe; one test thread drives a cluster.
#ifndef F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_CLUSTER_H_
#define F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_CLUSTER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tests/server/loopback_port.h"

namespace f2obo::testing {

// One postmaster and its data directory.
class PgServer {
 public:
  PgServer(std::string bindir, std::string data_dir, std::string log, uid_t uid, gid_t gid)
      : bindir_(std::move(bindir)),
        data_dir_(std::move(data_dir)),
        log_(std::move(log)),
        uid_(uid),
        gid_(gid) {}
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // pg_ctl start -w: returns once the server accepts connections (a
  // standby: read-only ones), on the port its configuration names.
  absl::Status Start();
  // kill -9 of every process of the server (the postmaster leads its own
  // process group: pg_ctl starts it with setsid), as a crash of its machine
  // would stop it; returns once the postmaster is gone.  Start() again runs
  // crash recovery.
  absl::Status Kill();
  // pg_ctl stop -m immediate (teardown).
  absl::Status Stop();
  // pg_ctl promote -w (a standby becomes a primary).
  absl::Status Promote();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }
  void set_port(int port) { port_ = port; }
  const std::string& data_dir() const { return data_dir_; }
  // The server's log so far.
  std::string Log() const;

  // Runs bindir/`tool` with `args` as the cluster's user; its output goes
  // to the server's log.  Returns its exit code.
  int Run(const std::string& tool, const std::vector<std::string>& args,
          const std::vector<std::string>& env = {}) const;

 private:
  const std::string bindir_, data_dir_, log_;
  const uid_t uid_;
  const gid_t gid_;
  int port_ = 0;
  pid_t pid_ = -1;
};

class PgCluster {
 public:
  // initdb, start, CREATE DATABASE; with `sync_standby` also a standby made
  // by pg_basebackup, streaming from the primary, which lists it in
  // synchronous_standby_names (synchronous_commit = on): a commit the
  // primary acknowledges is on the standby.  Returns once the standby is
  // the primary's synchronous one.
  static absl::StatusOr<std::unique_ptr<PgCluster>> Start(bool sync_standby = false);
  ~PgCluster();  // stops every server, removes the directory

  PgServer& primary() { return *primary_; }
  PgServer& standby() { return *standby_; }  // only with sync_standby
  bool has_standby() const { return standby_ != nullptr; }

  const std::string& user() const { return user_; }
  const std::string& password() const { return password_; }
  const std::string& database() const { return database_; }
  const std::string& dir() const { return dir_; }
  // postgresql://user:password@127.0.0.1:port/db for server `s` (without
  // the password when `with_password` is false: then PGPASSWORD or a
  // passfile must supply it).
  std::string Uri(const PgServer& s, bool with_password = true) const;
  // The same for database `db` (made by CreateDatabase).
  std::string UriOf(const PgServer& s, const std::string& db) const;
  // CREATE DATABASE `db` on the primary (each test its own store).
  absl::Status CreateDatabase(const std::string& db) const;
  // Both servers, primary first, with target_session_attrs=read-write: a
  // client finds whichever is the primary.
  std::string MultiHostUri(bool with_password = true) const;

  // Runs `sql` on server `s` (database `db`, database() when empty) and
  // returns the first column of the first row ("" when there is none).
  absl::StatusOr<std::string> Query(const PgServer& s, const std::string& sql,
                                    const std::string& db = "") const;
  // Waits until `s` answers `sql` with `want`, or `timeout` passes.
  absl::Status AwaitQuery(const PgServer& s, const std::string& sql, const std::string& want,
                          std::chrono::milliseconds timeout) const;

 private:
  PgCluster() = default;
  absl::Status Init(bool sync_standby);
  absl::Status StartStandby();

  std::string bindir_, dir_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
  std::string user_ = "f2obo", password_, database_ = "f2obo";
  std::unique_ptr<PgServer> primary_, standby_;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_CLUSTER_H_
