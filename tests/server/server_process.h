// Runs the real f2obo-server binary as a child process on loopback for
// end-to-end tests.  The server announces its bound ports on stdout; Start()
// blocks reading that line (no sleeps, no port guessing).
#ifndef F2OBO_TESTS_SERVER_SERVER_PROCESS_H_
#define F2OBO_TESTS_SERVER_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace f2obo::testing {

class ServerProcess {
 public:
  // Starts F2OBO_SERVER_PATH (F2OBO_FAULT_SERVER_PATH, the fault-injection
  // build, when F2OBO_TEST_CRASH_AT or F2OBO_TEST_FAIL_AT is set in the
  // environment; F2OBO_SERVER_BINARY overrides both) with --listen=127.0.0.1:0
  // --metrics_listen=127.0.0.1:0 --data_dir=<data_dir> plus `extra_flags`.
  // An empty `data_dir` makes a fresh temporary directory.
  explicit ServerProcess(std::vector<std::string> extra_flags = {}, std::string data_dir = "");
  // SIGKILLs a still-running server; removes a data directory it made.
  ~ServerProcess();

  bool started() const { return grpc_port_ > 0; }
  pid_t pid() const { return pid_; }  // -1 once stopped
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  const std::string& banner() const { return banner_; }
  const std::string& data_dir() const { return data_dir_; }
  // Everything the server wrote to stderr so far (appended across
  // restarts on the same data directory).
  std::string Stderr() const;
  // How often `text` occurs in Stderr(), waiting (on inotify events of the
  // log file, not by polling) until it occurs `count` times or `timeout`
  // passes: compare the result with `count`.
  size_t AwaitStderr(const std::string& text, size_t count,
                     std::chrono::milliseconds timeout) const;

  // Sends `signal` and waits; returns the exit code (128 + signal if killed).
  int Stop(int signal);

 private:
  pid_t pid_ = -1;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::string banner_;
  std::string data_dir_;
  bool owns_data_dir_ = false;  // made here: removed by the destructor
};

// Sets an environment variable for one scope (e.g. F2OBO_TEST_CRASH_AT for
// the server started in it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

// A new empty directory under the test's temporary directory.
std::string MakeTempDir();

// GET http://127.0.0.1:port/path; returns the raw HTTP response.
std::string HttpGet(int port, const std::string& path);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_SERVER_PROCESS_H_
