#include "tests/server/store/postgres/pg_cluster.h"

#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace f2obo::testing {
namespace {

// The directory of PostgreSQL's server programs: F2OBO_PG_BINDIR, else what
// `pg_config --bindir` says.
absl::StatusOr<std::string> FindBindir() {
  std::string dir;
  if (const char* env = std::getenv("F2OBO_PG_BINDIR"); env != nullptr && *env) {
    dir = env;
  } else {
    FILE* p = popen("pg_config --bindir 2>/dev/null", "r");
    if (p == nullptr) return absl::FailedPreconditionError("cannot run pg_config");
    char buf[4096];
    while (fgets(buf, sizeof(buf), p) != nullptr) dir += buf;
    pclose(p);
    dir = std::string(absl::StripAsciiWhitespace(dir));
  }
  if (dir.empty() || access((dir + "/initdb").c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no PostgreSQL server programs (initdb) in '", dir,
        "' (pg_config --bindir, or F2OBO_PG_BINDIR): install them (scripts/deps.sh --test)"));
  }
  return dir;
}

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < bytes; ++i) {
    const unsigned v = rd() & 0xff;
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  return out;
}

absl::Status WriteFile(const std::string& path, const std::string& text, uid_t uid, gid_t gid) {
  {
    std::ofstream out(path, std::ios::app);
    out << text;
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  if (chown(path.c_str(), uid, gid) != 0) {
    return absl::InternalError(absl::StrCat("chown ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The processes whose parent is `parent` (from /proc).
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // pid (comm) state ppid ...: comm may hold spaces, so after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    std::string state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

}  // namespace

PgServer::~PgServer() { (void)Kill(); }

int PgServer::Run(const std::string& tool, const std::vector<std::string>& args,
                  const std::vector<std::string>& env) const {
  std::vector<std::string> argv = {bindir_ + "/" + tool};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    if (getuid() == 0 && (setgid(gid_) != 0 || setuid(uid_) != 0)) _exit(126);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> c;
    for (std::string& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execv(c[0], c.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

absl::Status PgServer::Start() {
  if (pid_ > 0) return absl::FailedPreconditionError("already running");
  std::vector<std::string> argv = {bindir_ + "/postgres", "-D", data_dir_, "-p",
                                   std::to_string(port_)};
  const pid_t pid = fork();
  if (pid == 0) {
    // Its own process group (Kill stops all of it), gone with the test.
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int log = open(log_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (log >= 0) {
      dup2(log, STDOUT_FILENO);
      dup2(log, STDERR_FILENO);
    }
    if (getuid() == 0 && (setgid(gid_) != 0 || setuid(uid_) != 0)) _exit(126);
    std::vector<char*> c;
    for (std::string& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execv(c[0], c.data());
    _exit(127);
  }
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  pid_ = pid;
  // Ready when it accepts connections; an exit before that is a failure.
  const std::string conninfo =
      absl::StrCat("host=127.0.0.1 port=", port_, " dbname=postgres connect_timeout=5");
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < limit) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat("postgres exited before accepting connections; ", "its log:\n", Log()));
    }
    if (PQping(conninfo.c_str()) == PQPING_OK) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polls the server's readiness
  }
  (void)Kill();
  return absl::DeadlineExceededError("postgres did not accept connections within 60 s");
}

absl::Status PgServer::Kill() {
  if (pid_ <= 0) return absl::OkStatus();
  // Every process of the server at once, as a crash of its machine stops
  // them: the postmaster's children lead process groups of their own, so
  // they are found by their parent.  Stopped first, the postmaster starts
  // no new child meanwhile.
  kill(pid_, SIGSTOP);
  const std::vector<pid_t> children = ChildrenOf(pid_);
  for (pid_t c : children) kill(c, SIGKILL);
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  // Its children were reparented to this process (a subreaper) before it
  // could be reaped.
  for (pid_t c : children) waitpid(c, &status, 0);
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status PgServer::Stop() {
  if (pid_ <= 0) return absl::OkStatus();
  kill(pid_, SIGQUIT);  // immediate shutdown
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return absl::OkStatus();
}

absl::Status PgServer::Promote() {
  if (int rc = Run("pg_ctl", {"promote", "-w", "-t", "60", "-D", data_dir_}); rc != 0) {
    return absl::InternalError(absl::StrCat("pg_ctl promote exited ", rc, "; log:\n", Log()));
  }
  return absl::OkStatus();
}

std::string PgServer::Log() const {
  std::ifstream in(log_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::unique_ptr<PgCluster>> PgCluster::Start(bool sync_standby) {
  std::unique_ptr<PgCluster> c(new PgCluster());
  if (absl::Status s = c->Init(sync_standby); !s.ok()) return s;
  return c;
}

absl::Status PgCluster::Init(bool sync_standby) {
  absl::StatusOr<std::string> bindir = FindBindir();
  if (!bindir.ok()) return bindir.status();
  bindir_ = *bindir;
  // The postmaster's backends are its children; killed with it, they are
  // reparented to this process (and reaped by Kill) rather than to an init
  // that may not reap them.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  if (getuid() == 0) {
    const passwd* pw = getpwnam("postgres");
    if (pw == nullptr) pw = getpwnam("nobody");
    if (pw == nullptr) return absl::FailedPreconditionError("no postgres or nobody user");
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
  } else {
    uid_ = getuid();
    gid_ = getgid();
  }
  const char* base = std::getenv("TEST_TMPDIR");
  if (base == nullptr) base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/f2obo-pg-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp: ", std::strerror(errno)));
  }
  dir_ = templ;
  if (chown(dir_.c_str(), uid_, gid_) != 0) {
    return absl::InternalError(absl::StrCat("chown ", dir_, ": ", std::strerror(errno)));
  }
  password_ = RandomHex(12);
  const std::string pwfile = dir_ + "/pwfile";
  if (absl::Status s = WriteFile(pwfile, password_ + "\n", uid_, gid_); !s.ok()) return s;
  primary_ =
      std::make_unique<PgServer>(bindir_, dir_ + "/primary", dir_ + "/primary.log", uid_, gid_);
  if (int rc = primary_->Run("initdb", {"-D", primary_->data_dir(), "-U", user_, "--pwfile", pwfile,
                                        "-A", "scram-sha-256", "--auth-local=trust", "-E", "UTF8",
                                        "--no-sync", "--no-instructions"});
      rc != 0) {
    return absl::InternalError(absl::StrCat("initdb exited ", rc, "; log:\n", primary_->Log()));
  }
  std::filesystem::remove(pwfile);
  // Durability on (the point of the tests), sockets in the cluster's own
  // directory, TCP on loopback only; synchronous_commit = on (PostgreSQL's
  // default, written so it is visible).
  const std::string conf =
      absl::StrCat("listen_addresses = '127.0.0.1'\n", "unix_socket_directories = '", dir_, "'\n",
                   "fsync = on\nsynchronous_commit = on\nfull_page_writes = on\n",
                   "max_connections = 50\nshared_buffers = 32MB\n", "wal_level = replica\n",
                   "max_wal_senders = 4\nwal_keep_size = 64MB\n", "log_min_messages = warning\n");
  if (absl::Status s = WriteFile(primary_->data_dir() + "/postgresql.conf", conf, uid_, gid_);
      !s.ok()) {
    return s;
  }
  // The port is free when chosen, not necessarily when the server binds it
  // (other tests run beside this one): a few tries.
  absl::Status started;
  for (int attempt = 0; attempt < 5; ++attempt) {
    primary_->set_port(FreeLoopbackPort());
    started = primary_->Start();
    if (started.ok()) break;
  }
  if (!started.ok()) return started;
  absl::StatusOr<std::string> made = Query(*primary_, "");
  if (!made.ok()) return made.status();
  if (sync_standby) return StartStandby();
  return absl::OkStatus();
}

absl::Status PgCluster::StartStandby() {
  standby_ =
      std::make_unique<PgServer>(bindir_, dir_ + "/standby", dir_ + "/standby.log", uid_, gid_);
  const std::string pass = "PGPASSWORD=" + password_;
  if (int rc = standby_->Run(
          "pg_basebackup",
          {"-D", standby_->data_dir(), "-h", "127.0.0.1", "-p", std::to_string(primary_->port()),
           "-U", user_, "-X", "stream", "--no-sync", "-c", "fast"},
          {pass});
      rc != 0) {
    return absl::InternalError(
        absl::StrCat("pg_basebackup exited ", rc, "; log:\n", standby_->Log()));
  }
  const std::string conf =
      absl::StrCat("primary_conninfo = 'host=127.0.0.1 port=", primary_->port(), " user=", user_,
                   " password=", password_, " application_name=standby'\n");
  if (absl::Status s = WriteFile(standby_->data_dir() + "/postgresql.auto.conf", conf, uid_, gid_);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = WriteFile(standby_->data_dir() + "/standby.signal", "", uid_, gid_);
      !s.ok()) {
    return s;
  }
  absl::Status started;
  for (int attempt = 0; attempt < 5; ++attempt) {
    standby_->set_port(FreeLoopbackPort());
    started = standby_->Start();
    if (started.ok()) break;
  }
  if (!started.ok()) return started;
  // From here on a commit on the primary waits for the standby's flush.
  for (const char* sql :
       {"ALTER SYSTEM SET synchronous_standby_names = 'standby'", "SELECT pg_reload_conf()"}) {
    if (absl::StatusOr<std::string> r = Query(*primary_, sql); !r.ok()) return r.status();
  }
  return AwaitQuery(*primary_,
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = "
                    "'standby'",
                    "sync", std::chrono::seconds(60));
}

PgCluster::~PgCluster() {
  if (standby_ != nullptr) (void)standby_->Kill();
  if (primary_ != nullptr) (void)primary_->Kill();
  std::error_code ignored;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
}

std::string PgCluster::Uri(const PgServer& s, bool with_password) const {
  return absl::StrCat("postgresql://", user_, with_password ? ":" + password_ : "",
                      "@127.0.0.1:", s.port(), "/", database_);
}

std::string PgCluster::UriOf(const PgServer& s, const std::string& db) const {
  return absl::StrCat("postgresql://", user_, ":", password_, "@127.0.0.1:", s.port(), "/", db);
}

absl::Status PgCluster::CreateDatabase(const std::string& db) const {
  return Query(*primary_, "CREATE DATABASE " + db).status();
}

std::string PgCluster::MultiHostUri(bool with_password) const {
  std::string hosts = absl::StrCat("127.0.0.1:", primary_->port());
  if (standby_ != nullptr) absl::StrAppend(&hosts, ",127.0.0.1:", standby_->port());
  return absl::StrCat("postgresql://", user_, with_password ? ":" + password_ : "", "@", hosts, "/",
                      database_, "?target_session_attrs=read-write");
}

absl::StatusOr<std::string> PgCluster::Query(const PgServer& s, const std::string& sql,
                                             const std::string& db) const {
  // Over the cluster's socket directory (trust for local connections): the
  // database may not exist yet (sql "": create it).
  const bool create = sql.empty();
  const std::string conninfo =
      absl::StrCat("host=", dir_, " port=", s.port(), " user=", user_, " dbname=",
                   create       ? "postgres"
                   : db.empty() ? database_
                                : db,
                   " connect_timeout=10");
  PGconn* conn = PQconnectdb(conninfo.c_str());
  std::string out;
  absl::Status status;
  if (PQstatus(conn) != CONNECTION_OK) {
    status = absl::UnavailableError(PQerrorMessage(conn));
  } else {
    PGresult* r = PQexec(conn, create ? ("CREATE DATABASE " + database_).c_str() : sql.c_str());
    const ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      status = absl::InternalError(absl::StrCat(sql, ": ", PQresultErrorMessage(r)));
    } else if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) {
      out = PQgetvalue(r, 0, 0);
    }
    PQclear(r);
  }
  PQfinish(conn);
  if (!status.ok()) return status;
  return out;
}

absl::Status PgCluster::AwaitQuery(const PgServer& s, const std::string& sql,
                                   const std::string& want,
                                   std::chrono::milliseconds timeout) const {
  const auto limit = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (true) {
    absl::StatusOr<std::string> r = Query(s, sql);
    last = r.ok() ? *r : std::string(r.status().message());
    if (r.ok() && *r == want) return absl::OkStatus();
    if (std::chrono::steady_clock::now() >= limit) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polls the server's state
  }
  return absl::DeadlineExceededError(
      absl::StrCat("'", sql, "' answered '", last, "', not '", want, "'"));
}

}  // namespace f2obo::testing
