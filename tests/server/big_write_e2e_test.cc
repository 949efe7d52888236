// Over real gRPC with a real server process: one
// session's big write does not hold up the others.  While a session of
// kBigY variables is created (its state and first checkpoint, ~2 x 160 MB)
// or deleted, another session steps with a short deadline and every step
// succeeds; before side files (server/store/side_files.cc) the store's one
// writer held those steps for seconds.  And the big write is still all or
// nothing under kill -9: after a restart the session is whole (its records
// verified at load) or absent with no file left behind, and the other
// session's acknowledged steps are all there.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using testing::RequestFor;
using testing::ScopedEnv;
using testing::ServerProcess;
using testing::SpecFor;

// y and z of 10^7 doubles: a create through the writer would hold it ~4 s;
// with side files it takes ~1 s of its caller's (bench/RESULTS.md, "The
// service by workload").
constexpr int kBigY = 10'000'000;
// The small session's steps: far above a step's own time, far below the
// stall the big write caused.
constexpr auto kStepDeadline = std::chrono::milliseconds(1000);

std::vector<std::string> Flags() { return {"--max_y_dim=" + std::to_string(kBigY + 100)}; }

v1::CreateSessionRequest Big() {
  v1::CreateSessionRequest r;
  r.set_session_id("big");
  v1::SessionSpec* spec = r.mutable_spec();
  spec->set_algorithm("f2obo");
  spec->mutable_family()->set_name("quadratic");
  spec->mutable_family()->set_x_dim(4);
  spec->mutable_family()->set_y_dim(kBigY);
  spec->mutable_constraint()->mutable_ball()->set_radius(2.0);
  return r;
}

// The side files in a data directory (server/store/side_files.cc).
int SideFiles(const std::string& dir) {
  DIR* d = opendir((dir + "/records").c_str());
  if (d == nullptr) return 0;
  int n = 0;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// Steps session "small" (t = 1, 2, ...) with kStepDeadline each until
// stopped or a step fails; counts the steps acknowledged while `during`
// is set, and remembers the first failure.
class Stepper {
 public:
  Stepper(client::Client& c, const std::atomic<bool>& during, int64_t first_t = 1)
      : c_(c), during_(during) {
    thread_ = std::thread([this, first_t] { Run(first_t); });
  }
  ~Stepper() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Waits until step `t` is acknowledged; false if a step failed first.
  bool WaitAcknowledged(int64_t t) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return acknowledged_ >= t || !failure_.ok(); });
    return acknowledged_ >= t;
  }
  int64_t acknowledged() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acknowledged_;
  }
  int steps_during() const {
    std::lock_guard<std::mutex> lock(mu_);
    return steps_during_;
  }
  grpc::Status failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

 private:
  void Run(int64_t first_t) {
    const FamilyCase f = AllFamilyCases()[0];
    for (int64_t t = first_t; !stop_; ++t) {
      const bool was_during = during_.load();
      auto ctx = c_.NewContext();
      ctx->set_deadline(std::chrono::system_clock::now() + kStepDeadline);
      v1::StepReply reply;
      const grpc::Status s = c_.stub().Step(ctx.get(), RequestFor(f, "small", t), &reply);
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        failure_ = s;
        cv_.notify_all();
        return;
      }
      acknowledged_ = t;
      if (was_during && during_.load()) ++steps_during_;
      cv_.notify_all();
    }
  }

  client::Client& c_;
  const std::atomic<bool>& during_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t acknowledged_ = 0;  // guarded by mu_
  int steps_during_ = 0;      // guarded by mu_
  grpc::Status failure_;      // guarded by mu_
  std::thread thread_;
};

void CreateSmall(client::Client& c) {
  v1::CreateSessionRequest r;
  r.set_session_id("small");
  *r.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 3);
  ASSERT_TRUE(c.CreateSession(r).ok());
}

TEST(BigWrite, OtherSessionsStepWithinAShortDeadlineWhileABigSessionIsCreatedAndDeleted) {
  ServerProcess server(Flags());
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::Client c({server.target()});
  CreateSmall(c);
  std::atomic<bool> creating{false}, deleting{false};
  {
    Stepper stepper(c, creating);
    ASSERT_TRUE(stepper.WaitAcknowledged(3)) << stepper.failure().error_message();
    creating = true;
    const absl::StatusOr<v1::SessionInfo> big = c.CreateSession(Big());
    creating = false;
    ASSERT_TRUE(big.ok()) << big.status();
    stepper.Stop();
    EXPECT_TRUE(stepper.failure().ok()) << "a small step failed: " << stepper.failure().error_code()
                                        << " " << stepper.failure().error_message();
    // The steps ran beside the create, not after it.
    EXPECT_GE(stepper.steps_during(), 3);
  }
  // Its state and first checkpoint: one side file and its hard link.
  EXPECT_EQ(SideFiles(server.data_dir()), 2);
  {
    const int64_t next = c.GetSession("small")->next_t();
    Stepper stepper(c, deleting, next);
    ASSERT_TRUE(stepper.WaitAcknowledged(next + 2)) << stepper.failure().error_message();
    deleting = true;
    const absl::Status deleted = c.DeleteSession("big");
    deleting = false;
    ASSERT_TRUE(deleted.ok()) << deleted;
    stepper.Stop();
    EXPECT_TRUE(stepper.failure().ok()) << "a small step failed: " << stepper.failure().error_code()
                                        << " " << stepper.failure().error_message();
  }
  EXPECT_EQ(SideFiles(server.data_dir()), 0);
  EXPECT_EQ(c.GetSession("big").status().code(), absl::StatusCode::kNotFound);
}

// Restarts on `dir` and checks what must hold after a kill -9 during
// the big write: the small session holds every acknowledged step, and the
// big session is whole or absent (no side file left either way).
void CheckAfterRestart(const std::string& dir, int64_t acknowledged, bool* big_exists) {
  ServerProcess server(Flags(), dir);
  ASSERT_TRUE(server.started()) << server.Stderr();
  EXPECT_EQ(server.Stderr().find("NOT LOADED"), std::string::npos) << server.Stderr();
  client::Client c({server.target()});
  const absl::StatusOr<v1::SessionInfo> small = c.GetSession("small");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_GE(small->next_t(), acknowledged + 1);
  const absl::StatusOr<v1::SessionInfo> big = c.GetSession("big");
  *big_exists = big.ok();
  if (big.ok()) {
    EXPECT_EQ(big->bilevel().y_dim(), kBigY);
    EXPECT_EQ(SideFiles(dir), 2);
    EXPECT_TRUE(c.DeleteSession("big").ok());
  } else {
    EXPECT_EQ(big.status().code(), absl::StatusCode::kNotFound) << big.status();
  }
  EXPECT_EQ(SideFiles(dir), 0);
}

// kill -9 while the big session's state is being written (its side file has
// appeared): the session was never committed, so it is absent after the
// restart and its partial file is removed.
TEST(BigWrite, KillDuringABigCreateLeavesItAbsentAndKeepsTheOtherSessionsSteps) {
  const std::string dir = testing::MakeTempDir();
  int64_t acknowledged = 0;
  {
    ServerProcess server(Flags(), dir);
    ASSERT_TRUE(server.started()) << server.Stderr();
    client::Client c({server.target()});
    CreateSmall(c);
    std::atomic<bool> creating{false};
    Stepper stepper(c, creating);
    std::thread create([&] { c.CreateSession(Big()).IgnoreError(); });
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (SideFiles(dir) == 0 && std::chrono::steady_clock::now() < limit) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // polls the directory
    }
    const bool writing = SideFiles(dir) > 0;
    server.Stop(SIGKILL);
    create.join();
    stepper.Stop();
    ASSERT_TRUE(writing) << "the big state was never written";
    acknowledged = stepper.acknowledged();
  }
  bool big_exists = true;
  CheckAfterRestart(dir, acknowledged, &big_exists);
  // (Killed while its file was written, before its transaction.)
  EXPECT_FALSE(big_exists);
}

// The two sides of the commit, with the fault-injection build's crash
// points (the process dies as by kill -9): after its side files are
// written but before the writer's transaction, the session is absent and
// its files removed; once the transaction is durable, it is whole.
TEST(BigWrite, ABigCreateCrashedBeforeItsCommitIsAbsentAndAfterItWhole) {
  for (const std::string point : {"store_write:big", "before_publish:big"}) {
    SCOPED_TRACE(point);
    const std::string dir = testing::MakeTempDir();
    {
      ScopedEnv crash("F2OBO_TEST_CRASH_AT", point);
      ServerProcess server(Flags(), dir);
      ASSERT_TRUE(server.started()) << server.Stderr();
      client::Client c({server.target()});
      CreateSmall(c);
      EXPECT_FALSE(c.CreateSession(Big()).ok());  // the server died
    }
    bool big_exists = false;
    CheckAfterRestart(dir, 0, &big_exists);
    EXPECT_EQ(big_exists, point == "before_publish:big");
  }
}

// A delete is durable before its files go: a crash between the two leaves
// the session deleted, and the files are removed at the restart.
TEST(BigWrite, ABigDeleteCrashedBeforeItsFilesAreRemovedLeavesNoneAfterRestart) {
  const std::string dir = testing::MakeTempDir();
  {
    ServerProcess server(Flags(), dir);
    ASSERT_TRUE(server.started()) << server.Stderr();
    client::Client c({server.target()});
    CreateSmall(c);
    ASSERT_TRUE(c.CreateSession(Big()).ok());
  }
  {
    ScopedEnv crash("F2OBO_TEST_CRASH_AT", "side_files_released:big");
    ServerProcess server(Flags(), dir);
    ASSERT_TRUE(server.started()) << server.Stderr();
    client::Client c({server.target()});
    EXPECT_FALSE(c.DeleteSession("big").ok());  // the server died
    EXPECT_EQ(SideFiles(dir), 2);
  }
  bool big_exists = true;
  CheckAfterRestart(dir, 0, &big_exists);
  EXPECT_FALSE(big_exists);
}

}  // namespace
}  // namespace f2obo
