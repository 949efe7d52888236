// f2obo-server --help lists the server's own flags with their help texts
// (Abseil's default filter matched no file of ours: "No flags matched").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/help_output.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ServerHelp, HelpListsTheServersOwnFlagsWithTheirHelpTexts) {
  for (const char* flag : {"--help", "--helpshort"}) {
    const std::string out = testing::RunForOutput(F2OBO_SERVER_PATH, flag);
    EXPECT_THAT(out, Not(HasSubstr("No flags matched"))) << flag;
    EXPECT_THAT(out, HasSubstr("--listen (gRPC listen address host:port")) << flag;
    EXPECT_THAT(out, HasSubstr("--data_dir (Directory of the session store (SQLite)")) << flag;
    EXPECT_THAT(out, HasSubstr("--token_file (Bearer tokens")) << flag;
    EXPECT_THAT(out, HasSubstr("--max_batch_rows (Maximum rows in one batch)")) << flag;
    // Only ours: Abseil's own flags stay under --helpfull.
    EXPECT_THAT(out, Not(HasSubstr("--flagfile"))) << flag;
  }
  const std::string full = testing::RunForOutput(F2OBO_SERVER_PATH, "--helpfull");
  EXPECT_THAT(full, HasSubstr("--listen (gRPC listen address host:port"));
  EXPECT_THAT(full, HasSubstr("--flagfile"));
}

}  // namespace
}  // namespace f2obo
