#include "tests/client/cli/cli_e2e_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <sstream>

namespace f2obo::testing {

pid_t Spawn(const std::vector<std::string>& args, int* out_fd, int* err_fd, int out_pipe_bytes) {
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return -1;
  if (out_pipe_bytes > 0 && fcntl(out[0], F_SETPIPE_SZ, out_pipe_bytes) < 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    std::vector<std::string> all = {F2OBO_CLI_PATH};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  *out_fd = out[0];
  *err_fd = err[0];
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result RunCli(const std::vector<std::string>& args, double limit_seconds) {
  Result r;
  int fds[2];
  const pid_t pid = Spawn(args, &fds[0], &fds[1]);
  if (pid < 0) return r;
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_seconds);
  while (open_fds > 0) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    int wait_ms = -1;
    if (limit_seconds > 0) {
      wait_ms = static_cast<int>(std::max<int64_t>(
          0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                   std::chrono::steady_clock::now())
                 .count()));
    }
    const int ready = poll(p, 2, wait_ms);
    if (ready < 0) break;
    if (ready == 0) {  // past the limit: a hang
      kill(pid, SIGKILL);
      limit_seconds = 0;
      continue;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || (p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[4096];
      const ssize_t n = read(fds[i], buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, n);
      } else {
        close(fds[i]);
        fds[i] = -1;
        p[i].fd = -1;
        --open_fds;
      }
    }
  }
  r.code = Wait(pid);
  return r;
}

std::string Field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
  }
  return "<no " + key + ">";
}

}  // namespace f2obo::testing
