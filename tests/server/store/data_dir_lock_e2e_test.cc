// One data directory, one server, end to end with the real binary: a second
// server on a directory in use refuses to start (saying which and why), the
// first keeps serving, and the directory is free again once the first has
// gone, however it went (the lock is the kernel's, never a stale file).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <string>

#include "tests/server/server_process.h"

namespace f2obo::testing {
namespace {

using ::testing::HasSubstr;

class DataDirLock : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    std::filesystem::remove(dir_ + "-stderr.log", ignored);
  }
  const std::string dir_ = MakeTempDir();
};

TEST_F(DataDirLock, ASecondServerOnTheSameDataDirRefusesToStartAndTheFirstKeepsServing) {
  ServerProcess first({}, dir_);
  ASSERT_TRUE(first.started()) << first.Stderr();
  ServerProcess second({}, dir_);
  EXPECT_FALSE(second.started()) << "two servers write one data directory";
  EXPECT_EQ(second.Stop(SIGKILL), 1);  // it exited on its own, with 1
  EXPECT_THAT(second.Stderr(), HasSubstr("--data_dir " + dir_ + " is already in use"));
  EXPECT_THAT(second.Stderr(), HasSubstr("(pid " + std::to_string(first.pid()) + ")"));
  // The first still answers.
  EXPECT_THAT(HttpGet(first.metrics_port(), "/metrics"), HasSubstr("200 OK"));
  EXPECT_EQ(first.Stop(SIGTERM), 0);
  ServerProcess third({}, dir_);
  EXPECT_TRUE(third.started()) << third.Stderr();
}

TEST_F(DataDirLock, TheDirectoryIsFreeAgainAfterTheHolderIsKilled) {
  ServerProcess first({}, dir_);
  ASSERT_TRUE(first.started()) << first.Stderr();
  EXPECT_EQ(first.Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(std::filesystem::exists(dir_ + "/LOCK"));  // left behind, and harmless
  ServerProcess second({}, dir_);
  EXPECT_TRUE(second.started()) << second.Stderr();
}

}  // namespace
}  // namespace f2obo::testing
