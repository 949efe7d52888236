// f2obo-cli --help lists the CLI's commands and flags with their help texts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/help_output.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CliHelp, HelpListsTheCommandsAndTheGlobalFlagsWithTheirHelpTexts) {
  const std::string out = testing::RunForOutput(F2OBO_CLI_PATH, "--help");
  EXPECT_THAT(out, Not(HasSubstr("No flags matched")));
  EXPECT_THAT(out, HasSubstr("stream "));
  EXPECT_THAT(out, HasSubstr("--server (default: \"127.0.0.1:50051\")"));
  EXPECT_THAT(out, HasSubstr("Address host:port of the f2obo server"));
  EXPECT_THAT(out, HasSubstr("--timeout"));
}

TEST(CliHelp, HelpfullListsEveryCommandsFlagsWithTheirHelpTexts) {
  const std::string out = testing::RunForOutput(F2OBO_CLI_PATH, "--helpfull");
  EXPECT_THAT(out, HasSubstr("--session (default: \"\")"));
  EXPECT_THAT(out, HasSubstr("Session id to act on"));
  EXPECT_THAT(out, HasSubstr("--rows_per_step (default: 512)"));
  EXPECT_THAT(out, HasSubstr("--server (default: \"127.0.0.1:50051\")"));
}

}  // namespace
}  // namespace f2obo
