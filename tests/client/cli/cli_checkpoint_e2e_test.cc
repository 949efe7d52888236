// f2obo-cli checkpoint, rollback and fork against the real server (see
// cli_e2e_fixture.h): a rolled-back stream re-streamed, and a fork streamed
// from a checkpoint, both end where an uninterrupted stream does.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace f2obo
