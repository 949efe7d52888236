// End to end: the real f2obo-cli against the real server on loopback --
// help, create/stream/decision/sessions/metrics/delete, resuming streams,
// health, bad input and the bench load generator (see cli_e2e_fixture.h).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/client/cli/cli_e2e_fixture.h"

namespace f2obo {
namespace {

using testing::CliE2e;
using testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Result;
using testing::RunCli;
using testing::Spawn;
using testing::Wait;

TEST_F(CliE2e, HelpListsTheSubcommandsAndTheirFlags) {
  const Result help = RunCli({"help"});
  EXPECT_EQ(help.code, 0);
  for (const char* c : {"create", "stream", "decision", "sessions", "delete", "metrics", "health",
                        "bench", "loadgen", "create-group", "group", "evaluate", "--server"}) {
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
            "hypergradient_error,value,variation,drift,exact_skipped_reason,"
            "inner_loss_before,inner_gap,fw_gap,outer_gap,simple_f,simple_g,g_star_converged,"
            "exact_probability,evaluated_steps,skipped_steps,estimate,estimate_standard_error");
  int rows = 0;
  int evaluated = 0;
  while (std::getline(csv, line)) {
    ++rows;
    const std::vector<std::string> cols = absl::StrSplit(line, ',');
    ASSERT_EQ(cols.size(), 29u) << line;
    EXPECT_EQ(cols[0], std::to_string(rows)) << line;
    if (cols[10].empty()) continue;  // no exact metrics at this step
    ++evaluated;
    // 30 steps never fill the metrics queue: every due step is evaluated
    // with p_t = 1, so the estimate is BLReg itself, without error.
    EXPECT_EQ(cols[24], "1") << line;
    EXPECT_EQ(cols[25], std::to_string(evaluated)) << line;
    EXPECT_EQ(cols[26], "0") << line;
    EXPECT_EQ(cols[27], cols[11]) << line;
    EXPECT_EQ(cols[28], "0") << line;
  }
  EXPECT_EQ(rows, 30);
  EXPECT_GT(evaluated, 0);

  const Result deleted = Cli({"delete", "--session=flow"});
  ASSERT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_THAT(Cli({"sessions"}).out, Not(HasSubstr("flow")));
  const Result gone = Cli({"decision", "--session=flow"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_THAT(gone.err, HasSubstr("NOT_FOUND"));
}

// Simple bilevel sessions from the CLI: created with --constraint, streamed
// from the CSV (the label column is the least-squares target), their gaps
// in `metrics`; linear_inverse's f reads no rows, so the stream sends no
// upper rows (the family refuses them).
TEST_F(CliE2e, SimpleBilevelSessionsStreamFromCsvAndReportTheirGaps) {
  for (const std::string family : {"least_squares", "linear_inverse"}) {
    const std::string id = "simple-" + family;
    const Result created =
        Cli({"create", "--id=" + id, "--family=" + family, "--features=4", "--algorithm=ir_scg",
             "--constraint=l1_ball:3", "--seed=7", "--exact_every=1"});
    ASSERT_EQ(created.code, 0) << created.err;
    const Result streamed = Cli(StreamArgs(id, {"--steps=12"}));
    ASSERT_EQ(streamed.code, 0) << family << ": " << streamed.err;
    EXPECT_THAT(streamed.out, HasSubstr("inner gap")) << streamed.out;
    const std::string csv_path = *dir_ + "/" + id + ".csv";
    const Result metrics = Cli({"metrics", "--session=" + id, "--until=12", "--out=" + csv_path});
    ASSERT_EQ(metrics.code, 0) << metrics.err;
    std::ifstream csv(csv_path);
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));  // the header
    int with_gap = 0;
    while (std::getline(csv, line)) {
      std::vector<std::string> cols = absl::StrSplit(line, ',');
      ASSERT_EQ(cols.size(), 29u) << line;
      if (cols[18].empty()) continue;  // no exact metrics for this step
      ++with_gap;
      EXPECT_GE(std::stod(cols[18]), 0.0) << line;                         // inner_gap
      EXPECT_LE(std::stod(cols[18]), std::stod(cols[19]) + 1e-9) << line;  // <= fw_gap
    }
    EXPECT_EQ(with_gap, 12) << family;
  }
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
  const Result r =
      Cli({"stream", "--create", "--id=oneshot", Data(), "--steps=5", "--rows_per_step=16"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created session oneshot"));
  EXPECT_THAT(r.out, HasSubstr("next_t = 6"));
  EXPECT_EQ(Cli({"delete", "--session=oneshot"}).code, 0);
}

// `stream --tasks=m` splits the dataset into m tasks and tags each step's
// batches; a re-run resumes the same multi-task stream.
TEST_F(CliE2e, StreamTasksSplitsTheDatasetIntoTasks) {
  const Result r =
      Cli({"stream", "--create", "--id=mt", Data(), "--tasks=6", "--tasks_per_step=2",
           "--algorithm=mt_f2obo", "--steps=12", "--rows_per_step=10", "--max_temperature=11"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("created session mt"));
  EXPECT_THAT(r.out, HasSubstr("streamed 12 steps to mt"));
  const Result resumed = Cli(
      {"stream", "--session=mt", Data(), "--tasks_per_step=2", "--steps=3", "--rows_per_step=10"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("next_t = 16"));
  const Result list = Cli({"sessions"});
  EXPECT_THAT(list.out, ::testing::ContainsRegex("mt +mt_f2obo +multitask_logistic_hpo +16 "));
  const Result wrong = Cli({"stream", "--session=mt", Data(), "--tasks=5", "--steps=1"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("--tasks: 5, but the session was created with 6 tasks"));
  EXPECT_EQ(Cli({"delete", "--session=mt"}).code, 0);
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

// `stream` rides out a rebalance: the "moved" status (the session's key
// fenced on this replica, as `rebalance` does) is retried past
// --max_attempts for up to --moved_retry_seconds, and the stream resumes
// with no gap once the key is served again (here: the fence lifted).
TEST_F(CliE2e, StreamRetriesMovedPastMaxAttemptsAndResumesWithoutAGap) {
  Create("mv");
  // UNAVAILABLE answers to Steps the test server has counted.
  const auto refusals = [] {
    const std::string text = testing::HttpGet(server_->metrics_port(), "/metrics");
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (absl::StartsWith(line, "f2obo_rpc_errors_total{") &&
          absl::StrContains(line, "method=\"Steps\"") && absl::StrContains(line, "UNAVAILABLE")) {
        return std::stod(std::string(line.substr(line.rfind(' ') + 1)));
      }
    }
    return 0.0;
  };
  auto stub = v1::F2obo::NewStub(
      grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  const auto fence = [&](bool on) {
    grpc::ClientContext ctx;
    if (on) {
      v1::SetFenceRequest req;
      req.set_routing_key("mv");
      req.set_target("r1");
      v1::Fence out;
      return stub->SetFence(&ctx, req, &out).ok();
    }
    v1::LiftFenceRequest req;
    req.set_routing_key("mv");
    v1::LiftFenceResponse out;
    return stub->LiftFence(&ctx, req, &out).ok();
  };
  ASSERT_TRUE(fence(true));
  const Result refused =
      Cli(StreamArgs("mv", {"--steps=3", "--max_attempts=1", "--moved_retry_seconds=0"}));
  EXPECT_EQ(refused.code, 1);
  EXPECT_THAT(refused.err, HasSubstr("is moving to replica 'r1'"));
  const double before = refusals();
  Result streamed;
  std::thread stream([&] {
    streamed = Cli(StreamArgs("mv", {"--steps=5", "--max_attempts=1", "--moved_retry_seconds=60"}));
  });
  // Lift once the stream has been refused more often than --max_attempts
  // allows (polled from the server's own counter).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (refusals() < before + 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // poll interval
  }
  EXPECT_GE(refusals(), before + 3);
  ASSERT_TRUE(fence(false));
  stream.join();
  ASSERT_EQ(streamed.code, 0) << streamed.err;
  EXPECT_THAT(streamed.out, HasSubstr("next_t = 6"));
  EXPECT_THAT(streamed.err, HasSubstr("--moved_retry_seconds=60"));
  EXPECT_EQ(Cli({"delete", "--session=mv"}).code, 0);
}

}  // namespace
}  // namespace f2obo
