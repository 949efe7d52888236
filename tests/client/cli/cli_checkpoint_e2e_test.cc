// f2obo-cli checkpoint, rollback and fork against the real server (see
// cli_e2e_fixture.h): a rolled-back stream re-streamed, and a fork streamed
// from a checkpoint, both end where an uninterrupted stream does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/client/cli/cli_e2e_fixture.h"

namespace f2obo {
namespace {

using testing::CliE2e;
using testing::Field;
using ::testing::HasSubstr;
using testing::Result;

std::string X(const Result& decision) { return Field(decision.out, "x"); }

TEST_F(CliE2e, RollbackAndForkReplayToTheSameDecisionAsAnUninterruptedStream) {
  Create("cp");
  Create("cp-straight");
  ASSERT_EQ(Cli(StreamArgs("cp-straight", {"--steps=20"})).code, 0);
  ASSERT_EQ(Cli(StreamArgs("cp", {"--steps=10"})).code, 0);
  const Result checkpoint = Cli({"checkpoint", "--session=cp"});
  ASSERT_EQ(checkpoint.code, 0) << checkpoint.err;
  EXPECT_EQ(checkpoint.out, "cp: next_t 11, algorithm sf2obo, checkpoints at t = 0, 10\n");
  ASSERT_EQ(Cli(StreamArgs("cp", {"--steps=7"})).code, 0);

  const Result rollback = Cli({"rollback", "--session=cp", "--to_t=10"});
  ASSERT_EQ(rollback.code, 0) << rollback.err;
  EXPECT_EQ(rollback.out, "cp: next_t 11, algorithm sf2obo, checkpoints at t = 0, 10\n");
  const Result fork = Cli({"fork", "--session=cp", "--id=cp.fork", "--at_t=10"});
  ASSERT_EQ(fork.code, 0) << fork.err;
  EXPECT_EQ(fork.out, "cp.fork: next_t 11, algorithm sf2obo, checkpoints at t = 10\n");
  // The stream resumes from each session's next_t, with the same data.
  ASSERT_EQ(Cli(StreamArgs("cp", {"--steps=10"})).code, 0);
  ASSERT_EQ(Cli(StreamArgs("cp.fork", {"--steps=10"})).code, 0);
  const Result straight = Cli({"decision", "--session=cp-straight", "--all"});
  const Result rolled = Cli({"decision", "--session=cp", "--all"});
  const Result forked = Cli({"decision", "--session=cp.fork", "--all"});
  EXPECT_EQ(Field(rolled.out, "t"), "21");
  EXPECT_EQ(X(rolled), X(straight));
  EXPECT_EQ(X(forked), X(straight));
}

TEST_F(CliE2e, CheckpointCommandsReportBadRequestsWithTheirExitCodes) {
  Create("cpbad");
  ASSERT_EQ(Cli(StreamArgs("cpbad", {"--steps=3"})).code, 0);
  const Result missing = Cli({"rollback", "--session=cpbad"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--to_t is required"));
  const Result no_checkpoint = Cli({"rollback", "--session=cpbad", "--to_t=2"});
  EXPECT_EQ(no_checkpoint.code, 1);
  EXPECT_THAT(no_checkpoint.err, HasSubstr("FAILED_PRECONDITION"));
  EXPECT_THAT(no_checkpoint.err, HasSubstr("nearest: t = 0 before it"));
  const Result other_class = Cli({"fork", "--session=cpbad", "--algorithm=ir_scg"});
  EXPECT_EQ(other_class.code, 1);
  EXPECT_THAT(other_class.err, HasSubstr("algorithm: 'ir_scg'"));
  const Result bad_option = Cli({"fork", "--session=cpbad", "--gamma=-1"});
  EXPECT_EQ(bad_option.code, 1);
  EXPECT_THAT(bad_option.err, HasSubstr("options.gamma"));
  const Result not_a_flag = Cli({"checkpoint", "--session=cpbad", "--to_t=1"});
  EXPECT_EQ(not_a_flag.code, 2);
  EXPECT_EQ(Field(Cli({"decision", "--session=cpbad"}).out, "t"), "4");  // unchanged
}

// The steps (first column) of `metrics` CSV output, header skipped.
std::vector<int> MetricSteps(const std::string& csv) {
  std::vector<int> steps;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) steps.push_back(std::stoi(line.substr(0, line.find(','))));
  return steps;
}

std::vector<int> Range(int first, int last) {
  std::vector<int> out;
  for (int t = first; t <= last; ++t) out.push_back(t);
  return out;
}

// After a rollback `metrics` (no --follow) printed nothing
// and never exited, the history was gone, and a fork started with none.
// Now the history up to the rollback point stays, a fork inherits its
// source's up to the fork point, and the command ends.
TEST_F(CliE2e, MetricsAfterRollbackAndForkKeepTheHistoryUpToThatPointAndEnd) {
  Create("cpm");
  ASSERT_EQ(Cli(StreamArgs("cpm", {"--steps=10"})).code, 0);
  ASSERT_EQ(Cli({"checkpoint", "--session=cpm"}).code, 0);
  ASSERT_EQ(Cli(StreamArgs("cpm", {"--steps=5"})).code, 0);
  const Result before = Cli({"metrics", "--session=cpm"}, 60);
  ASSERT_EQ(before.code, 0) << before.err;
  EXPECT_EQ(MetricSteps(before.out), Range(1, 15));

  ASSERT_EQ(Cli({"rollback", "--session=cpm", "--to_t=10"}).code, 0);
  const Result after = Cli({"metrics", "--session=cpm"}, 60);
  ASSERT_EQ(after.code, 0) << "exit " << after.code << ": " << after.err;
  EXPECT_EQ(MetricSteps(after.out), Range(1, 10));
  // The rows kept are the very rows before the rollback.
  EXPECT_EQ(after.out, before.out.substr(0, after.out.size()));

  ASSERT_EQ(Cli({"fork", "--session=cpm", "--id=cpm.fork", "--at_t=10"}).code, 0);
  const Result forked = Cli({"metrics", "--session=cpm.fork"}, 60);
  ASSERT_EQ(forked.code, 0) << forked.err;
  EXPECT_EQ(MetricSteps(forked.out), Range(1, 10));
  // Both go on from there.
  ASSERT_EQ(Cli(StreamArgs("cpm", {"--steps=2"})).code, 0);
  ASSERT_EQ(Cli(StreamArgs("cpm.fork", {"--steps=2"})).code, 0);
  EXPECT_EQ(MetricSteps(Cli({"metrics", "--session=cpm"}, 60).out), Range(1, 12));
  EXPECT_EQ(MetricSteps(Cli({"metrics", "--session=cpm.fork"}, 60).out), Range(1, 12));
}

// Step metrics are kept in memory: after a restart `metrics` has none of
// the earlier steps.  It says so and ends, instead of waiting forever.
TEST_F(CliE2e, AfterARestartMetricsEndsAndSaysTheStepsAreNotHeld) {
  const std::string dir = testing::MakeTempDir();
  testing::ServerProcess first({}, dir);  // its own server, to restart
  ASSERT_TRUE(first.started());
  const std::string server = "--server=" + first.target();
  ASSERT_EQ(testing::RunCli({"create", "--id=rs", "--features=4", "--classes=3", server}).code, 0);
  std::vector<std::string> stream = StreamArgs("rs", {"--steps=4", server});
  ASSERT_EQ(testing::RunCli(stream, 60).code, 0);
  first.Stop(SIGKILL);
  testing::ServerProcess second({}, dir);
  ASSERT_TRUE(second.started());
  const Result r = testing::RunCli({"metrics", "--session=rs", "--server=" + second.target()}, 60);
  ASSERT_EQ(r.code, 0) << "exit " << r.code << ": " << r.err;
  EXPECT_THAT(MetricSteps(r.out), ::testing::IsEmpty());
  EXPECT_THAT(r.err, HasSubstr("no metrics of steps 1 to 4 of session 'rs'"));
}

}  // namespace
}  // namespace f2obo
