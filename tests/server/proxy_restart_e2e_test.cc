// Streams through nginx survive a replica's restart: two
// f2obo-server replicas behind a real nginx (config from
// deploy/proxy/gen_proxy_config.py), a real f2obo-cli streaming through it,
// and the replica holding the session killed with -9 mid-stream and
// restarted on its data directory and port.  nginx resets the stream
// (RST_STREAM INTERNAL_ERROR) and answers 502 while the replica is down; the
// CLI must take both as "retry", resume at the server's next_t, and end with
// every step applied once: the same decision, bit for bit, as an
// uninterrupted stream into a server of its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "client/client.h"
#include "grpcpp/grpcpp.h"
#include "tests/client/cli/cli_e2e_fixture.h"
#include "tests/server/proxy_process.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ProxyProcess;
using testing::ServerProcess;

constexpr int kReplicas = 2;
constexpr int kSteps = 150;

// 300 rows, 4 features, 3 classes from a fixed linear teacher.
void WriteCsv(const std::string& path) {
  std::ofstream csv(path);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  for (int i = 0; i < 300; ++i) {
    double score[3] = {0, 0, 0};
    for (int j = 0; j < 4; ++j) {
      const double a = normal(rng);
      for (int c = 0; c < 3; ++c) score[c] += a * ((j + c) % 3 - 1.0);
      csv << absl::StrFormat("%.6f,", a);
    }
    csv << (score[0] > score[1] ? (score[0] > score[2] ? 0 : 2) : (score[1] > score[2] ? 1 : 2))
        << "\n";
  }
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fd);
  return out;
}

class ProxyRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(replicas_.NotStarted(), "");
    proxy_ = std::make_unique<ProxyProcess>(replicas_.RingOf());
    ASSERT_EQ(proxy_->Start(), "") << proxy_->config();
    data_ = testing::MakeTempDir() + "/rows.csv";
    WriteCsv(data_);
  }

  std::vector<std::string> StreamArgs(const std::string& id, const std::string& server) const {
    return {"stream",          "--create",           "--id=" + id,        "--data=" + data_,
            "--steps=150",     "--rows_per_step=32", "--print_every=1",   "--seed=7",
            "--exact_every=0", "--algorithm=f2obo",  "--server=" + server};
  }

  testing::ReplicaSet replicas_{kReplicas};
  std::unique_ptr<ProxyProcess> proxy_;
  std::string data_;
};

TEST_F(ProxyRestartTest, ACliStreamRidesOutAKillNineOfItsReplicaBehindNginx) {
  int out = -1, err = -1;
  // A one-page stdout pipe, not drained until the replica is back: the CLI
  // blocks in its progress output after a few dozen steps, so the kill
  // lands mid-stream whatever the machine's speed.
  const pid_t pid = testing::Spawn(StreamArgs("ride", proxy_->target()), &out, &err, 4096);
  ASSERT_GT(pid, 0);
  std::string head;
  char ch;
  while (head.find("step 1 (1/150)") == std::string::npos && read(out, &ch, 1) == 1) head += ch;
  ASSERT_THAT(head, HasSubstr("step 1 (1/150)"));
  const int victim = replicas_.Holder("ride");
  ASSERT_GE(victim, 0);
  ASSERT_EQ(replicas_.Kill(victim), 128 + SIGKILL);

  // While it is down, the proxy answers a classifiable UNAVAILABLE (its
  // error page), not INTERNAL.
  {
    auto stub = v1::F2obo::NewStub(
        grpc::CreateChannel(proxy_->target(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.AddMetadata("x-f2obo-session", "ride");
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::GetSessionRequest req;
    req.set_session_id("ride");
    v1::SessionInfo info;
    const grpc::Status s = stub->GetSession(&ctx, req, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("f2obo proxy: the replica holding this session"));
  }

  ASSERT_TRUE(replicas_.StartAgain(victim)) << replicas_[victim].banner();
  const std::string rest = ReadAll(out);
  const std::string errors = ReadAll(err);
  ASSERT_EQ(testing::Wait(pid), 0) << head << rest << errors;
  EXPECT_THAT(rest, HasSubstr("next_t = 151"));
  EXPECT_THAT(errors, HasSubstr("reconnecting")) << "the stream never broke: " << errors;

  // Every step applied once: the decision of an uninterrupted stream.
  ServerProcess reference;
  ASSERT_TRUE(reference.started());
  const testing::Result straight = testing::RunCli(StreamArgs("ride", reference.target()));
  ASSERT_EQ(straight.code, 0) << straight.err;
  client::ClientOptions via{proxy_->target()};
  absl::StatusOr<v1::Decision> got = client::Client(via).GetDecision("ride");
  absl::StatusOr<v1::Decision> want =
      client::Client(client::ClientOptions{reference.target()}).GetDecision("ride");
  ASSERT_TRUE(got.ok() && want.ok()) << got.status() << want.status();
  EXPECT_EQ(got->t(), kSteps + 1);
  EXPECT_EQ(want->t(), kSteps + 1);
  ASSERT_EQ(got->x_size(), want->x_size());
  for (int i = 0; i < got->x_size(); ++i) EXPECT_EQ(got->x(i), want->x(i)) << "x[" << i << "]";
  absl::StatusOr<v1::SessionInfo> a = client::Client(via).GetSession("ride");
  absl::StatusOr<v1::SessionInfo> b =
      client::Client(client::ClientOptions{reference.target()}).GetSession("ride");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->rows_processed(), b->rows_processed());
}

}  // namespace
}  // namespace f2obo
