#include "tests/server/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace f2obo::testing {

ScopedEnv::ScopedEnv(const char* name, const std::string& value) : name_(name) {
  setenv(name, value.c_str(), 1);
}

ScopedEnv::~ScopedEnv() { unsetenv(name_); }

std::string MakeTempDir() {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/f2obo-test-XXXXXX";
  return mkdtemp(templ.data()) != nullptr ? templ : "";
}

ServerProcess::ServerProcess(std::vector<std::string> extra_flags, std::string data_dir)
    : data_dir_(data_dir.empty() ? MakeTempDir() : data_dir), owns_data_dir_(data_dir.empty()) {
  int out[2];
  if (pipe(out) != 0) return;
  // F2OBO_SERVER_BINARY runs another build's server (the benchmarks' A/B);
  // a fault to inject selects the fault-injection build.
  const char* binary = std::getenv("F2OBO_SERVER_BINARY");
  const bool faults = std::getenv("F2OBO_TEST_CRASH_AT") != nullptr ||
                      std::getenv("F2OBO_TEST_FAIL_AT") != nullptr ||
                      std::getenv("F2OBO_TEST_DELAY_AT") != nullptr;
  std::vector<std::string> args = {binary != nullptr && *binary ? binary
                                   : faults                     ? F2OBO_FAULT_SERVER_PATH
                                                                : F2OBO_SERVER_PATH,
                                   "--listen=127.0.0.1:0", "--metrics_listen=127.0.0.1:0",
                                   "--data_dir=" + data_dir_};
  // Later flags win, so extra_flags may override the listen addresses.
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  const std::string log = data_dir_ + "-stderr.log";
  const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  pid_ = fork();
  if (pid_ == 0) {
    dup2(out[1], STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  if (err >= 0) close(err);
  // Read the announcement line: "... listening on H:P, metrics on H:M/metrics".
  char ch;
  while (read(out[0], &ch, 1) == 1 && ch != '\n') banner_.push_back(ch);
  close(out[0]);
  std::smatch m;
  static const std::regex kLine(R"(listening on [^ ]+:(\d+), metrics on [^ ]+:(\d+)/metrics)");
  if (std::regex_search(banner_, m, kLine)) {
    grpc_port_ = std::stoi(m[1]);
    metrics_port_ = std::stoi(m[2]);
  }
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) Stop(SIGKILL);
  std::error_code ignored;
  if (owns_data_dir_) {
    std::filesystem::remove_all(data_dir_, ignored);
    std::filesystem::remove(data_dir_ + "-stderr.log", ignored);
  }
}

std::string ServerProcess::Stderr() const {
  std::ifstream in(data_dir_ + "-stderr.log");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

namespace {

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

size_t ServerProcess::AwaitStderr(const std::string& text, size_t count,
                                  std::chrono::milliseconds timeout) const {
  const auto limit = std::chrono::steady_clock::now() + timeout;
  const int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  // Watched before the first read, so no write between the read and the
  // wait goes unseen.  Without a watch the wait would see nothing: say so
  // (the caller's comparison then fails) rather than wait blind.
  const std::string log = data_dir_ + "-stderr.log";
  if (fd < 0 || inotify_add_watch(fd, log.c_str(), IN_MODIFY) < 0) {
    std::fprintf(stderr, "AwaitStderr: cannot watch %s: %s\n", log.c_str(), std::strerror(errno));
    if (fd >= 0) close(fd);
    return Occurrences(Stderr(), text);
  }
  size_t seen = Occurrences(Stderr(), text);
  while (seen < count) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        limit - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char events[4096];
    while (read(fd, events, sizeof(events)) > 0) {
    }
    seen = Occurrences(Stderr(), text);
  }
  close(fd);
  return seen;
}

int ServerProcess::Stop(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
    }
  }
  close(fd);
  return response;
}

}  // namespace f2obo::testing
