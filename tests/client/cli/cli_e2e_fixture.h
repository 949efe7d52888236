// Shared by the CLI end-to-end tests: runs the real f2obo-cli binary
// (F2OBO_CLI_PATH) as a subprocess against one real f2obo-server per test
// suite (ServerProcess) on 127.0.0.1, with small CSV datasets written by the
// fixture.  Synchronization is by process exit and by reading the child's
// output, never by sleeping.
#ifndef F2OBO_TESTS_CLIENT_CLI_CLI_E2E_FIXTURE_H_
#define F2OBO_TESTS_CLIENT_CLI_CLI_E2E_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tests/server/server_process.h"

namespace f2obo::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

// Forks and execs the CLI with stdout and stderr on pipes (the stdout pipe
// shrunk to `out_pipe_bytes` when given).  Returns -1 on failure.
pid_t Spawn(const std::vector<std::string>& args, int* out_fd, int* err_fd, int out_pipe_bytes = 0);
// Waits for `pid`; its exit code, or 128 + signal.
int Wait(pid_t pid);
// Runs the CLI to completion, capturing both streams and the exit code.
// With `limit_seconds` > 0 a CLI still running after that long is killed
// (SIGKILL; code 128 + 9): a hang fails the test instead of stalling it.
Result RunCli(const std::vector<std::string>& args, double limit_seconds = 0);
// The value of a "key: value" line of `decision` output.
std::string Field(const std::string& text, const std::string& key);

class CliE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new ServerProcess();
    ASSERT_TRUE(server_->started()) << server_->banner();
    char tmpl[] = "/tmp/f2obo_cli_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = new std::string(tmpl);
    // 300 training and 150 test rows, 4 features, 3 classes from a fixed
    // linear teacher.
    WriteCsv(*dir_ + "/data.csv", 300, 5);
    WriteCsv(*dir_ + "/test.csv", 150, 6);
  }
  static void WriteCsv(const std::string& path, int rows, unsigned seed) {
    std::ofstream csv(path);
    csv << "f0,f1,f2,f3,label\n";
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    for (int i = 0; i < rows; ++i) {
      double a[4], score[3] = {0, 0, 0};
      for (int j = 0; j < 4; ++j) {
        a[j] = normal(rng);
        for (int c = 0; c < 3; ++c) score[c] += a[j] * ((j + c) % 3 - 1.0);
      }
      const int label =
          score[0] > score[1] ? (score[0] > score[2] ? 0 : 2) : (score[1] > score[2] ? 1 : 2);
      char line[160];
      std::snprintf(line, sizeof(line), "%.6f,%.6f,%.6f,%.6f,%d\n", a[0], a[1], a[2], a[3], label);
      csv << line;
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  // The CLI against the test server with `args`.
  static Result Cli(std::vector<std::string> args, double limit_seconds = 0) {
    args.push_back("--server=" + server_->target());
    return RunCli(args, limit_seconds);
  }
  static std::string Data() { return "--data=" + *dir_ + "/data.csv"; }
  static std::vector<std::string> StreamArgs(const std::string& id, std::vector<std::string> more) {
    std::vector<std::string> args = {
        "stream", "--session=" + id, Data(), "--rows_per_step=32", "--phase_steps=10", "--seed=7"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  static void Create(const std::string& id) {
    const Result r = Cli(
        {"create", "--id=" + id, "--features=4", "--classes=3", "--algorithm=sf2obo", "--seed=7"});
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_EQ(r.out, id + "\n");
  }

  inline static ServerProcess* server_ = nullptr;
  inline static std::string* dir_ = nullptr;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CLIENT_CLI_CLI_E2E_FIXTURE_H_
