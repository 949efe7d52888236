// Runs the real f2obo-server binary as a child process on loopback for
// end-to-end tests.  The server announces its bound ports on stdout; Start()
// blocks reading that line (no sleeps, no port guessing).
#ifndef F2OBO_TESTS_SERVER_SERVER_PROCESS_H_
#define F2OBO_TESTS_SERVER_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace f2obo::testing {

class ServerProcess {
 public:
  // Starts F2OBO_SERVER_PATH with --listen=127.0.0.1:0
  // --metrics_listen=127.0.0.1:0 plus `extra_flags`.
  explicit ServerProcess(std::vector<std::string> extra_flags = {});
  ~ServerProcess();  // SIGKILLs a still-running server

  bool started() const { return grpc_port_ > 0; }
  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(grpc_port_); }
  const std::string& banner() const { return banner_; }

  // Sends `signal` and waits; returns the exit code (128 + signal if killed).
  int Stop(int signal);

 private:
  pid_t pid_ = -1;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  std::string banner_;
};

// GET http://127.0.0.1:port/path; returns the raw HTTP response.
std::string HttpGet(int port, const std::string& path);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_SERVER_PROCESS_H_
