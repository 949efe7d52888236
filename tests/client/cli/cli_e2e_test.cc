// End to end: the real f2obo-cli binary (F2OBO_CLI_PATH) as a subprocess
// against the real f2obo-server (via ServerProcess) on 127.0.0.1, with a
// small CSV dataset written by the test.  Synchronization is by process exit
// and by reading the child's output, never by sleeping.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ServerProcess;

struct Result {
  int code = -1;
  std::string out, err;
};

// Forks and execs the CLI with stdout and stderr on pipes (the stdout pipe
// shrunk to `out_pipe_bytes` when given).
pid_t Spawn(const std::vector<std::string>& args, int* out_fd, int* err_fd,
            int out_pipe_bytes = 0) {
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

// Runs the CLI to completion, capturing both streams and the exit code.
Result RunCli(const std::vector<std::string>& args) {
  Result r;
  int fds[2];
  const pid_t pid = Spawn(args, &fds[0], &fds[1]);
  if (pid < 0) return r;
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) break;
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

// The value of a "key: value" line of `decision` output.
std::string Field(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
  }
  return "<no " + key + ">";
}

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
      const int label = score[0] > score[1] ? (score[0] > score[2] ? 0 : 2)
                                            : (score[1] > score[2] ? 1 : 2);
      char line[160];
      std::snprintf(line, sizeof(line), "%.6f,%.6f,%.6f,%.6f,%d\n", a[0], a[1], a[2], a[3],
                    label);
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
  static Result Cli(std::vector<std::string> args) {
    args.push_back("--server=" + server_->target());
    return RunCli(args);
  }
  static std::string Data() { return "--data=" + *dir_ + "/data.csv"; }
  static std::vector<std::string> StreamArgs(const std::string& id, std::vector<std::string> more) {
    std::vector<std::string> args = {"stream", "--session=" + id, Data(), "--rows_per_step=32",
                                     "--phase_steps=10", "--seed=7"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }
  static void Create(const std::string& id) {
    const Result r = Cli({"create", "--id=" + id, "--features=4", "--classes=3",
                          "--algorithm=sf2obo", "--seed=7"});
    ASSERT_EQ(r.code, 0) << r.err;
    ASSERT_EQ(r.out, id + "\n");
  }

  static ServerProcess* server_;
  static std::string* dir_;
};
ServerProcess* CliE2e::server_ = nullptr;
std::string* CliE2e::dir_ = nullptr;

TEST_F(CliE2e, HelpListsTheSubcommandsAndTheirFlags) {
  const Result help = RunCli({"help"});
  EXPECT_EQ(help.code, 0);
  for (const char* c : {"create", "stream", "decision", "sessions", "delete", "metrics",
                        "health", "bench", "loadgen", "create-group", "group", "evaluate", "--server"}) {
    EXPECT_THAT(help.out, HasSubstr(c));
  }
  const Result none = RunCli({});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("loadgen"));
  const Result stream_help = RunCli({"stream", "--help"});
  EXPECT_EQ(stream_help.code, 0);
  EXPECT_THAT(stream_help.out, HasSubstr("--rows_per_step (default: 512)"));
  EXPECT_THAT(stream_help.out, HasSubstr("--label_noise"));
}

TEST_F(CliE2e, CreateStreamDecisionSessionsMetricsDelete) {
  // Features and classes inferred from the dataset.
  const Result created = Cli({"create", "--id=flow", "--dataset=" + *dir_ + "/data.csv",
                              "--algorithm=sf2obo", "--exact_every=1", "--verbose"});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_THAT(created.out, HasSubstr("flow\n"));
  EXPECT_THAT(created.out, HasSubstr("features: 4"));
  EXPECT_THAT(created.out, HasSubstr("classes: 3"));

  const Result streamed = Cli(StreamArgs("flow", {"--steps=30", "--print_every=10"}));
  ASSERT_EQ(streamed.code, 0) << streamed.err;
  EXPECT_THAT(streamed.out, HasSubstr("step 30 (30/30)"));
  EXPECT_THAT(streamed.out, HasSubstr("streamed 30 steps to flow"));

  const Result decision = Cli({"decision", "--session=flow"});
  ASSERT_EQ(decision.code, 0) << decision.err;
  EXPECT_EQ(Field(decision.out, "t"), "31");
  EXPECT_EQ(Field(decision.out, "x_dim"), "4");

  const Result list = Cli({"sessions"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("NEXT_T"));
  EXPECT_THAT(list.out, ::testing::ContainsRegex("flow +sf2obo +logistic_hpo +31 "));

  const std::string csv_path = *dir_ + "/flow.csv";
  const Result metrics = Cli({"metrics", "--session=flow", "--out=" + csv_path});
  ASSERT_EQ(metrics.code, 0) << metrics.err;
  std::ifstream csv(csv_path);
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_EQ(line,
            "t,lambda,z_iterations,y_iterations,cap_hit,residual_z,residual_y,"
            "upper_loss_before,accuracy_before,round_seconds,regret_term,blreg,"
            "hypergradient_error,value,variation,drift,exact_skipped_reason");
  int rows = 0;
  while (std::getline(csv, line)) {
    ++rows;
    EXPECT_EQ(line.substr(0, line.find(',')), std::to_string(rows)) << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 16) << line;
  }
  EXPECT_EQ(rows, 30);

  const Result deleted = Cli({"delete", "--session=flow"});
  ASSERT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("flow")));
  const Result gone = Cli({"decision", "--session=flow"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("NOT_FOUND"));
}

TEST_F(CliE2e, TwoRunsOfTenStepsEqualOneUninterruptedRunOfTwenty) {
  Create("resumed");
  Create("straight");
  const Result first = Cli(StreamArgs("resumed", {"--steps=10"}));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("next_t = 11"));
  // The second run starts from the server's next_t (and uses unary Step).
  const Result second = Cli(StreamArgs("resumed", {"--steps=10", "--mode=unary"}));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("step 11 (1/10)"));
  EXPECT_THAT(second.out, HasSubstr("next_t = 21"));
  const Result straight = Cli(StreamArgs("straight", {"--steps=20"}));
  ASSERT_EQ(straight.code, 0) << straight.err;

  const Result a = Cli({"decision", "--session=resumed", "--all"});
  const Result b = Cli({"decision", "--session=straight", "--all"});
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(Field(a.out, "t"), "21");
  EXPECT_EQ(Field(b.out, "t"), "21");
  EXPECT_EQ(Field(a.out, "x"), Field(b.out, "x"));
  EXPECT_EQ(Field(a.out, "lambda"), Field(b.out, "lambda"));
}

TEST_F(CliE2e, AKilledStreamResumesFromNextTAndMatchesAnUninterruptedOne) {
  Create("killed");
  Create("reference");
  int out = -1, err = -1;
  const pid_t pid = Spawn(
      [] {
        std::vector<std::string> a = StreamArgs("killed", {"--steps=200", "--print_every=1"});
        a.push_back("--server=" + server_->target());
        return a;
      }(),
      // A one-page stdout pipe that is not drained: the child blocks in its
      // progress output after a few dozen steps, so the kill lands mid-stream.
      &out, &err, 4096);
  ASSERT_GT(pid, 0);
  close(err);
  std::string line;
  char ch;
  while (read(out, &ch, 1) == 1 && ch != '\n') line.push_back(ch);
  EXPECT_THAT(line, HasSubstr("step 1 (1/200)"));
  kill(pid, SIGKILL);
  EXPECT_EQ(Wait(pid), 128 + SIGKILL);
  close(out);

  const Result interrupted = Cli({"decision", "--session=killed"});
  ASSERT_EQ(interrupted.code, 0) << interrupted.err;
  const int t = std::stoi(Field(interrupted.out, "t"));
  EXPECT_GT(t, 1);
  EXPECT_LT(t, 201);
  const Result resumed = Cli(StreamArgs("killed", {"--until=200"}));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("step " + std::to_string(t) + " (1/"));
  ASSERT_EQ(Cli(StreamArgs("reference", {"--steps=200"})).code, 0);

  const Result a = Cli({"decision", "--session=killed", "--all"});
  const Result b = Cli({"decision", "--session=reference", "--all"});
  EXPECT_EQ(Field(a.out, "t"), "201");
  EXPECT_EQ(Field(b.out, "t"), "201");
  EXPECT_EQ(Field(a.out, "x"), Field(b.out, "x"));
}

TEST_F(CliE2e, StreamCreateIsOneCommand) {
  const Result r = Cli({"stream", "--create", "--id=oneshot", Data(), "--steps=5",
                        "--rows_per_step=16"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created session oneshot"));
  EXPECT_THAT(r.out, HasSubstr("next_t = 6"));
  EXPECT_EQ(Cli({"delete", "--session=oneshot"}).code, 0);
}

TEST_F(CliE2e, HealthExitsZeroIffServing) {
  const Result ok = Cli({"health"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_EQ(ok.out, "SERVING\n");
  const Result down = RunCli({"health", "--server=127.0.0.1:1", "--timeout=5"});
  EXPECT_EQ(down.code, 1);
  EXPECT_THAT(down.err, HasSubstr("f2obo-cli: health: UNAVAILABLE"));
}

TEST_F(CliE2e, BadInputIsReportedNotCrashedOn) {
  const Result family = Cli({"create", "--family=nope", "--features=4", "--classes=3"});
  EXPECT_EQ(family.code, 2);
  EXPECT_THAT(family.err, HasSubstr("f2obo-cli: "));
  EXPECT_THAT(family.err, HasSubstr("family.name"));
  EXPECT_THAT(family.err, HasSubstr("nope"));

  const Result box = Cli({"create", "--features=4", "--classes=3", "--box=1"});
  EXPECT_EQ(box.code, 2);
  EXPECT_THAT(box.err, HasSubstr("--box"));
  const Result number = Cli({"create", "--features=four"});
  EXPECT_EQ(number.code, 2);
  EXPECT_THAT(number.err, HasSubstr("features"));
  const Result unknown = Cli({"sessions", "--bogus=1"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("unknown flag --bogus"));
  const Result misplaced = Cli({"sessions", "--gamma=0.1"});
  EXPECT_EQ(misplaced.code, 2);
  EXPECT_THAT(misplaced.err, HasSubstr("--gamma does not apply to 'sessions'"));
  EXPECT_EQ(Cli({"frobnicate"}).code, 2);
  EXPECT_EQ(Cli({"stream", Data()}).code, 2);  // no --session
  EXPECT_EQ(Cli({"stream", "--session=x", "--data=/nonexistent.csv"}).code, 2);

  // Refused by the server: an RPC error, exit 1, the server's message.
  const Result bad_id = Cli({"create", "--id=bad id!", "--features=4", "--classes=3"});
  EXPECT_EQ(bad_id.code, 1);
  EXPECT_THAT(bad_id.err, HasSubstr("INVALID_ARGUMENT"));
  const Result missing = Cli(StreamArgs("no-such-session", {"--steps=3"}));
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
  Create("twice");
  const Result again = Cli({"create", "--id=twice", "--features=4", "--classes=3"});
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("ALREADY_EXISTS"));
}

TEST_F(CliE2e, BenchReportsRatesConsistentWithTheBatchAndDeletesItsSessions) {
  const Result r = Cli({"bench", "--sessions=3", "--threads=2", "--steps=8", "--features=4",
                        "--classes=3", "--rows_per_step=16", "--id=lg", "--max_seconds=20"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("completed 24 of 24 steps"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("p50 [0-9.]+ ms  p95 [0-9.]+ ms  p99 [0-9.]+ ms"));
  EXPECT_THAT(r.out, HasSubstr("errors: 0"));
  // 16 rows of 4 doubles per step (two batches of 8) carry 512 bytes of
  // features plus labels and framing: bytes/step from MB/s / steps/s lies
  // in [512, 1024), and rows/s / steps/s is the 16 rows.
  double steps_per_s = 0, rows_per_s = 0, mb_per_s = 0;
  const size_t at = r.out.find(" steps/s (");
  ASSERT_NE(at, std::string::npos) << r.out;
  const size_t start = r.out.rfind(' ', at - 1) + 1;
  ASSERT_EQ(std::sscanf(r.out.c_str() + start, "%lf steps/s (%lf rows/s, %lf MB/s)", &steps_per_s,
                        &rows_per_s, &mb_per_s),
            3)
      << r.out;
  ASSERT_GT(steps_per_s, 0);
  EXPECT_NEAR(rows_per_s / steps_per_s, 16, 16 * 0.01) << r.out;
  const double bytes_per_step = mb_per_s * 1e6 / steps_per_s;
  EXPECT_GE(bytes_per_step, 512 * 0.999) << r.out;
  EXPECT_LT(bytes_per_step, 1024) << r.out;
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("lg-")));
  // The old name still works.
  const Result alias = Cli({"loadgen", "--sessions=1", "--steps=2", "--features=4", "--classes=3",
                            "--rows_per_step=4", "--id=al", "--max_seconds=20"});
  EXPECT_EQ(alias.code, 0) << alias.err;
  EXPECT_THAT(alias.out, HasSubstr("completed 2 of 2 steps"));
}

// Side-by-side groups through the CLI: one upload per step for every member,
// and each member ends exactly (bit for bit) where a lone session created
// and streamed with the same CLI arguments ends.
TEST_F(CliE2e, GroupMembersEndExactlyWhereLoneSessionsStreamedTheSameWayEnd) {
  // loss_tuning: x (gamma_j, Delta_j) is unconstrained, so it moves.
  const Result created = Cli({"create-group", "--group=side", "--family=loss_tuning",
                              "--features=4", "--classes=3", "--x0=1*3,0*3", "--seed=7",
                              "--gamma=0.05", "--member=fo:f2obo:inner_steps=3",
                              "--member=sf:sf2obo", "--member=af:af2obo:max_inner_iterations=20",
                              "--member=ob:obbo"});
  ASSERT_EQ(created.code, 0) << created.err;
  EXPECT_THAT(created.out, HasSubstr("side\n"));
  EXPECT_THAT(created.out, HasSubstr("side.fo  f2obo"));
  EXPECT_THAT(created.out, HasSubstr("side.ob  obbo"));
  struct Lone {
    std::string id;
    std::vector<std::string> flags;
  };
  const std::vector<Lone> lone = {
      {"lone-fo", {"--algorithm=f2obo", "--inner_steps=3"}},
      {"lone-sf", {"--algorithm=sf2obo"}},
      {"lone-af", {"--algorithm=af2obo", "--max_inner_iterations=20"}},
      {"lone-ob", {"--algorithm=obbo"}},
  };
  for (const Lone& l : lone) {
    std::vector<std::string> args = {"create",      "--id=" + l.id, "--family=loss_tuning",
                                     "--features=4", "--classes=3",  "--x0=1*3,0*3",
                                     "--seed=7",     "--gamma=0.05"};
    args.insert(args.end(), l.flags.begin(), l.flags.end());
    const Result r = Cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::vector<std::string> drift = {Data(), "--rows_per_step=32", "--phase_steps=10",
                                          "--seed=7", "--label_noise=15:0.2"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), drift.begin(), drift.end());
    return a;
  };
  // 12 steps over StepsGroup, then the rest with unary StepGroup: the second
  // run resumes from the members' next_t.
  const Result first = Cli(with({"stream", "--group=side", "--steps=12", "--print_every=4"}));
  ASSERT_EQ(first.code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("step 12 (12/12)"));
  for (const char* m : {"| fo loss", "| sf loss", "| af loss", "| ob loss"}) {
    EXPECT_THAT(first.out, HasSubstr(m));
  }
  EXPECT_THAT(first.out, HasSubstr("streamed 12 steps to group side"));
  const Result second =
      Cli(with({"stream", "--group=side", "--steps=18", "--mode=unary", "--print_every=6"}));
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_THAT(second.out, HasSubstr("step 13 (1/18)"));
  EXPECT_THAT(second.out, HasSubstr("next_t = 31"));
  for (const Lone& l : lone) {
    const Result r = Cli(with({"stream", "--session=" + l.id, "--steps=30"}));
    ASSERT_EQ(r.code, 0) << r.err;
  }

  const std::string names[] = {"fo", "sf", "af", "ob"};
  std::vector<std::string> xs;
  for (int i = 0; i < 4; ++i) {
    const Result member = Cli({"decision", "--session=side." + names[i], "--all"});
    const Result alone = Cli({"decision", "--session=" + lone[i].id, "--all"});
    ASSERT_EQ(member.code, 0) << member.err;
    ASSERT_EQ(alone.code, 0) << alone.err;
    EXPECT_EQ(Field(member.out, "t"), "31") << names[i];
    EXPECT_EQ(Field(member.out, "x"), Field(alone.out, "x")) << names[i];
    EXPECT_EQ(Field(member.out, "lambda"), Field(alone.out, "lambda")) << names[i];
    xs.push_back(Field(member.out, "x"));
  }
  // The comparison is not vacuous: the algorithms moved x, differently.
  EXPECT_NE(xs[0], "1 1 1 0 0 0");
  EXPECT_NE(xs[0], xs[1]);
  EXPECT_NE(xs[0], xs[3]);

  const Result shown = Cli({"group", "--group=side"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_THAT(shown.out, HasSubstr("group side: 4 members"));
  EXPECT_THAT(shown.out, HasSubstr("BLREG"));
  EXPECT_THAT(shown.out, ::testing::ContainsRegex("side\\.af +af2obo +31 +[0-9.e+-]+ +[0-9]+ "));
  EXPECT_THAT(shown.out, ::testing::ContainsRegex("side\\.ob +obbo +31 "));

  const Result missing = Cli({"group", "--group=nope"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("NOT_FOUND"));
  const Result stream_missing = Cli(with({"stream", "--group=nope", "--steps=2"}));
  EXPECT_EQ(stream_missing.code, 1);
  EXPECT_THAT(stream_missing.err, HasSubstr("NOT_FOUND"));
}

TEST_F(CliE2e, CreateGroupRejectsBadMembersNamingThem) {
  const std::vector<std::string> base = {"create-group", "--group=bad", "--features=4",
                                         "--classes=3"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return Cli(a);
  };
  const Result none = with({});
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("--member"));
  const Result shape = with({"--member=lonely"});
  EXPECT_EQ(shape.code, 2);
  EXPECT_THAT(shape.err, HasSubstr("not name:algorithm"));
  const Result key = with({"--member=a:f2obo:nonsense=1"});
  EXPECT_EQ(key.code, 2);
  EXPECT_THAT(key.err, HasSubstr("unknown option 'nonsense'"));
  const Result value = with({"--member=a:f2obo:gamma=fast"});
  EXPECT_EQ(value.code, 2);
  EXPECT_THAT(value.err, HasSubstr("option 'gamma': cannot parse 'fast'"));
  const Result algo = with({"--member=a:f2obo", "--member=b:nope"});
  EXPECT_EQ(algo.code, 2);
  EXPECT_THAT(algo.err, HasSubstr("member 'b'"));
  EXPECT_THAT(algo.err, HasSubstr("nope"));
  const Result option = with({"--member=a:f2obo:gamma=-1"});
  EXPECT_EQ(option.code, 2);
  EXPECT_THAT(option.err, HasSubstr("member 'a'"));
  EXPECT_THAT(option.err, HasSubstr("gamma"));
  // Refused by the server (duplicate member names): exit 1, nothing created.
  const Result dup = with({"--member=a:f2obo", "--member=a:sf2obo"});
  EXPECT_EQ(dup.code, 1);
  EXPECT_THAT(dup.err, HasSubstr("INVALID_ARGUMENT"));
  EXPECT_EQ(Cli({"group", "--group=bad"}).code, 1);
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("bad.a")));
}

TEST_F(CliE2e, DeleteGroupRemovesTheGroupAndItsMembersButAMemberAloneIsRefused) {
  const Result created = Cli({"create-group", "--group=gone", "--features=4", "--classes=3",
                              "--member=a:f2obo", "--member=b:sf2obo"});
  ASSERT_EQ(created.code, 0) << created.err;
  const Result member = Cli({"delete", "--session=gone.a"});
  EXPECT_EQ(member.code, 1);
  EXPECT_THAT(member.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(member.err, HasSubstr("member of group 'gone'"));
  const Result both = Cli({"delete", "--session=gone.a", "--group=gone"});
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("exactly one of --session and --group"));

  const Result deleted = Cli({"delete", "--group=gone"});
  ASSERT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "deleted group gone (2 sessions)\ndeleted gone.a\ndeleted gone.b\n");
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("gone.")));
  EXPECT_EQ(Cli({"group", "--group=gone"}).code, 1);
  const Result again = Cli({"delete", "--group=gone"});
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("NOT_FOUND"));
  EXPECT_THAT(again.err, HasSubstr("group 'gone' not found"));
}

// The value in column `column` of the data row of `session` in evaluate's table.
double EvalColumn(const std::string& table, const std::string& session, const std::string& column) {
  std::istringstream in(table);
  std::string line;
  std::getline(in, line);
  std::istringstream head(line);
  std::vector<std::string> names;
  for (std::string w; head >> w;) names.push_back(w);
  const auto at = std::find(names.begin(), names.end(), column);
  if (at == names.end()) return -1;
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::vector<std::string> cells;
    for (std::string w; row >> w;) cells.push_back(w);
    if (!cells.empty() && cells[0] == session && cells.size() == names.size()) {
      return std::stod(cells[at - names.begin()]);
    }
  }
  return -1;
}

TEST_F(CliE2e, EvaluateScoresTheDecisionOnHeldOutData) {
  const std::string test = "--test_data=" + *dir_ + "/test.csv";
  const std::string train = "--train_data=" + *dir_ + "/data.csv";
  const Result created = Cli({"create", "--id=scored", "--features=4", "--classes=3",
                              "--algorithm=f2obo", "--alpha=0.5", "--beta=0.5"});
  ASSERT_EQ(created.code, 0) << created.err;
  // At y = 0 every logit is 0: cross-entropy log 3, argmax class 0, so the
  // accuracy is the share of class 0 and the balanced accuracy 1/3.
  std::ifstream csv(*dir_ + "/test.csv");
  std::string line;
  std::getline(csv, line);
  int rows = 0, zeros = 0;
  while (std::getline(csv, line)) ++rows, zeros += line.back() == '0';
  const Result before = Cli({"evaluate", "--session=scored", test, train});
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_loss"), std::log(3.0), 1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_accuracy"),
              static_cast<double>(zeros) / rows, 1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "test_balanced_accuracy"), 1.0 / 3, 1e-12);
  EXPECT_NEAR(EvalColumn(before.out, "scored", "train_loss"), std::log(3.0), 1e-12);

  ASSERT_EQ(Cli(StreamArgs("scored", {"--steps=40", "--imbalance="})).code, 0);
  const std::string out_path = *dir_ + "/scored.csv";
  const Result after = Cli({"evaluate", "--session=scored", test, train, "--out=" + out_path});
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("wrote 1 rows"));
  std::ifstream in(out_path);
  std::string header, row;
  ASSERT_TRUE(std::getline(in, header));
  ASSERT_TRUE(std::getline(in, row));
  EXPECT_EQ(header,
            "session,algorithm,t,test_loss,test_accuracy,test_balanced_accuracy,train_loss,"
            "train_accuracy,train_balanced_accuracy");
  std::vector<double> v;
  std::istringstream cells(row.substr(row.find(",41,") + 4));
  for (std::string c; std::getline(cells, c, ',');) v.push_back(std::stod(c));
  ASSERT_EQ(v.size(), 6u) << row;
  EXPECT_LT(v[0], std::log(3.0) - 0.2);  // learned: the held-out loss fell
  EXPECT_GT(v[1], 0.7);                  // the teacher is linear
  EXPECT_GT(v[2], 0.6);
  EXPECT_LT(v[3], std::log(3.0) - 0.2);

  const Result bad = Cli({"evaluate", "--session=scored", "--test_data=/nonexistent.csv"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--test_data"));
  EXPECT_EQ(Cli({"evaluate", test}).code, 2);  // neither --session nor --group
  const Result gone = Cli({"evaluate", "--session=nope", test});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("NOT_FOUND"));
}

}  // namespace
}  // namespace f2obo
