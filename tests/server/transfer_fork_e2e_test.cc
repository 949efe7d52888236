// Sessions larger than a message, continued from
// transfer_e2e_test.cc: forks stored in parts across kill -9, and
// `f2obo-cli rebalance` moving such a session between replicas.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "tests/server/proxy_process.h"
#include "tests/server/server_process.h"
#include "tests/server/transfer_e2e_support.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ProxyProcess;
using testing::ServerProcess;
using transfer_e2e::Create;
using transfer_e2e::Export;
using transfer_e2e::ExportOf;
using transfer_e2e::Flags;
using transfer_e2e::Grow;
using transfer_e2e::kMaxMessage;
using transfer_e2e::Later;
using transfer_e2e::Request;
using transfer_e2e::SameBits;

// Forks are stored in parts (their parts shared with the source in
// memory): of the current state, at a checkpoint in a chain's middle and
// at the creation's (a chain's start).  After steps (the fork's own delta
// checkpoint among them) and kill -9, every fork and checkpoint reads back
// bit-exact, and the fork continues as its source does.
TEST(TransferForkE2e, ForksInPartsSurviveKillNineBitExact) {
  std::vector<std::string> flags = Flags();
  flags.push_back("--checkpoint_every=2");
  auto a = std::make_unique<ServerProcess>(flags);
  ASSERT_TRUE(a->started()) << a->banner();
  auto c = std::make_unique<client::Client>(client::ClientOptions{a->target()});
  int64_t next_t = Grow(*c, "big");  // checkpoints at 0, 2, 4, 6, 8
  ASSERT_EQ(next_t, 9);
  const auto fork = [&](const std::string& id, int64_t at_t) {
    v1::ForkSessionRequest req;
    req.set_session_id("big");
    req.set_new_session_id(id);
    if (at_t >= 0) req.set_at_t(at_t);
    const absl::StatusOr<v1::SessionInfo> f = c->ForkSession(req);
    EXPECT_TRUE(f.ok()) << f.status();
    return ExportOf(*c, id).state;
  };
  const std::string now = ExportOf(*c, "big").state;
  EXPECT_TRUE(fork("now", -1) == now);
  const std::string at4 = fork("at4", 4), at0 = fork("at0", 0);
  // A fresh session of the same spec is the state at 0.
  ASSERT_TRUE(c->CreateSession(Create("fresh")).ok());
  EXPECT_TRUE(at0 == ExportOf(*c, "fresh").state);
  EXPECT_FALSE(at4 == now);
  // The source and the fork step alike (a checkpoint at 10 for both).
  for (; next_t < 12; ++next_t) {
    const absl::StatusOr<v1::StepReply> x = c->Step(Request("big", next_t, Later(next_t)));
    const absl::StatusOr<v1::StepReply> y = c->Step(Request("now", next_t, Later(next_t)));
    ASSERT_TRUE(x.ok() && y.ok()) << x.status() << y.status();
    EXPECT_TRUE(SameBits(x->x(), y->x())) << "t = " << next_t;
  }
  const std::string dir = a->data_dir();
  a->Stop(SIGKILL);
  ServerProcess again(flags, dir);
  ASSERT_TRUE(again.started()) << again.banner();
  c = std::make_unique<client::Client>(client::ClientOptions{again.target()});
  const std::string big = ExportOf(*c, "big").state;
  EXPECT_TRUE(ExportOf(*c, "now").state == big);
  EXPECT_TRUE(ExportOf(*c, "at4").state == at4);
  EXPECT_TRUE(ExportOf(*c, "at0").state == at0);
  // The fork's checkpoint at 10 extends its first (at 8): both read back.
  v1::ForkSessionRequest req;
  for (const auto& [from, at_t] : std::vector<std::pair<std::string, int64_t>>{
           {"big", 10}, {"now", 10}, {"big", 8}, {"now", 8}}) {
    req.set_session_id(from);
    req.set_new_session_id(from + "_at" + std::to_string(at_t));
    req.set_at_t(at_t);
    const absl::StatusOr<v1::SessionInfo> f = c->ForkSession(req);
    ASSERT_TRUE(f.ok()) << from << " at " << at_t << ": " << f.status();
  }
  EXPECT_TRUE(ExportOf(*c, "big_at10").state == ExportOf(*c, "now_at10").state);
  EXPECT_TRUE(ExportOf(*c, "big_at8").state == ExportOf(*c, "now_at8").state);
  EXPECT_TRUE(ExportOf(*c, "now_at8").state == now);
  for (int k = 0; k < 2; ++k, ++next_t) {
    const absl::StatusOr<v1::StepReply> x = c->Step(Request("big", next_t, Later(next_t)));
    const absl::StatusOr<v1::StepReply> y = c->Step(Request("now", next_t, Later(next_t)));
    ASSERT_TRUE(x.ok() && y.ok()) << x.status() << y.status();
    EXPECT_TRUE(SameBits(x->x(), y->x())) << "t = " << next_t;
  }
}

// Runs f2obo-cli with `args`; its exit code, stdout and stderr into `out`.
int Cli(const std::vector<std::string>& args, std::string* out) {
  std::string command = std::string("'") + F2OBO_CLI_PATH + "'";
  for (const std::string& a : args) command += " '" + a + "'";
  command += " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(TransferRebalanceE2e, RebalanceMovesASessionLargerThanAMessage) {
  ServerProcess r0(Flags("r0")), r1(Flags("r1"));
  ASSERT_TRUE(r0.started()) << r0.banner();
  ASSERT_TRUE(r1.started()) << r1.banner();
  ProxyProcess staging({{"r0", r0.target()}, {"r1", r1.target()}});
  ASSERT_EQ(staging.Start(), "");
  // A key the two-replica ring maps to r1.
  client::Client via(client::ClientOptions{staging.target()});
  std::string id;
  for (int i = 0; i < 64 && id.empty(); ++i) {
    v1::GetServerInfoRequest req;
    req.set_routing_key("big" + std::to_string(i));
    v1::ServerInfo info;
    auto ctx = via.NewContext();
    ASSERT_TRUE(via.stub().GetServerInfo(ctx.get(), req, &info).ok());
    if (info.replica_name() == "r1") id = req.routing_key();
  }
  ASSERT_FALSE(id.empty());
  client::Client c0(client::ClientOptions{r0.target()}), c1(client::ClientOptions{r1.target()});
  const int64_t next_t = Grow(c0, id);
  const Export before = ExportOf(c0, id);
  ASSERT_GT(before.state.size(), static_cast<size_t>(kMaxMessage));
  std::string out;
  ASSERT_EQ(Cli({"rebalance", "--proxy=" + staging.target(),
                 "--replicas=r0=" + r0.target() + ",r1=" + r1.target()},
                &out),
            0)
      << out;
  EXPECT_THAT(out, HasSubstr("moved 1,"));
  EXPECT_EQ(c0.ListSessions()->sessions_size(), 0);  // (its fence stays, a tombstone)
  const absl::StatusOr<v1::SessionInfo> moved = c1.GetSession(id);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->next_t(), next_t);
  EXPECT_TRUE(ExportOf(c1, id).state == before.state);
  EXPECT_TRUE(c1.Step(Request(id, next_t, Later(next_t))).ok());
}

}  // namespace
}  // namespace f2obo
