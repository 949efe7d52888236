// Rebalancing: `f2obo-cli rebalance` moves the sessions whose
// routing key a new ring maps elsewhere, under a durable fence, with
// streams running and across kill -9 of the source or the target in the
// middle of a move.  Real replicas, real nginx, real CLI, all on loopback.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/proxy_process.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::FamilyCase;
using testing::ProxyProcess;
using testing::RequestFor;
using testing::ServerProcess;

using Ring = testing::ReplicaSet::Ring;

constexpr int kSessions = 40;

bool SameBits(const google::protobuf::RepeatedField<double>& a,
              const google::protobuf::RepeatedField<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

std::string Id(int i) { return absl::StrFormat("key-%02d", i); }

// Runs f2obo-cli with `args`; its exit code, stdout into `out`.
int Cli(const std::vector<std::string>& args, std::string* out) {
  std::string command = std::string("'") + F2OBO_CLI_PATH + "'";
  for (const std::string& a : args) command += " '" + a + "'";
  FILE* p = popen(command.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class RebalanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(replicas_.NotStarted(), "");
    live_ = std::make_unique<ProxyProcess>(replicas_.RingOf(3));
    ASSERT_EQ(live_->Start(), "");
    client::ClientOptions opt{live_->target()};
    opt.max_attempts = 200;  // rides out a move (UNAVAILABLE until the proxy switches)
    opt.max_backoff_seconds = 0.1;
    via_proxy_ = std::make_unique<client::Client>(opt);
    reference_server_ = std::make_unique<ServerProcess>();
    ASSERT_TRUE(reference_server_->started());
    reference_ =
        std::make_unique<client::Client>(client::ClientOptions{reference_server_->target()});
    for (int i = 0; i < kSessions; ++i) {
      v1::CreateSessionRequest req;
      req.set_session_id(Id(i));
      *req.mutable_spec() = testing::SpecFor(family_, "f2obo", 7000 + i);
      req.mutable_spec()->mutable_metrics()->set_exact_every(0);
      ASSERT_TRUE(via_proxy_->CreateSession(req).ok()) << Id(i);
      ASSERT_TRUE(reference_->CreateSession(req).ok()) << Id(i);
    }
    // A group moves as a unit: its members route with the group id.
    v1::CreateGroupRequest group;
    group.set_group_id("grp");
    *group.mutable_spec() = testing::SpecFor(family_, "f2obo", 99);
    group.mutable_spec()->mutable_metrics()->set_exact_every(0);
    group.add_members()->set_name("a");
    v1::GroupMember* b = group.add_members();
    b->set_name("b");
    b->mutable_options()->set_gamma(0.02);
    ASSERT_TRUE(via_proxy_->CreateGroup(group).ok());
    ASSERT_TRUE(reference_->CreateGroup(group).ok());
  }

  int Rebalance(const ProxyProcess& proxy, const std::vector<std::string>& extra,
                std::string* out) {
    std::vector<std::string> args = {"rebalance", "--proxy=" + proxy.target(),
                                     replicas_.ReplicasFlag()};
    args.insert(args.end(), extra.begin(), extra.end());
    return Cli(args, out);
  }

  // Where `proxy` routes `key`: the replica number its answer names.
  int RoutedTo(const ProxyProcess& proxy, const std::string& key) {
    client::Client c(client::ClientOptions{proxy.target()});
    v1::GetServerInfoRequest req;
    req.set_routing_key(key);
    v1::ServerInfo info;
    auto ctx = c.NewContext();
    if (!c.stub().GetServerInfo(ctx.get(), req, &info).ok()) return -1;
    return info.replica_name().empty() ? -1 : info.replica_name()[1] - '0';
  }
  // Polls until `live_` routes every key as `staging` does (after a
  // reload), or the deadline passes.
  bool WaitForRing(const ProxyProcess& staging) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      bool same = RoutedTo(*live_, "grp") == RoutedTo(staging, "grp");
      for (int i = 0; same && i < kSessions; ++i) {
        same = RoutedTo(*live_, Id(i)) == RoutedTo(staging, Id(i));
      }
      if (same) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // poll interval
    }
    return false;
  }

  // Step t of every session and the group through the live proxy, equal
  // bit for bit to the reference server's.
  void StepAll(int64_t t) {
    for (int i = 0; i < kSessions; ++i) {
      const v1::StepRequest req = RequestFor(family_, Id(i), t);
      absl::StatusOr<v1::StepReply> got = via_proxy_->Step(req);
      absl::StatusOr<v1::StepReply> want = reference_->Step(req);
      ASSERT_TRUE(got.ok()) << Id(i) << " t=" << t << ": " << got.status();
      ASSERT_TRUE(want.ok());
      EXPECT_TRUE(SameBits(got->x(), want->x())) << Id(i) << " t=" << t;
    }
    v1::GroupStepRequest g;
    g.set_group_id("grp");
    g.set_t(t);
    const v1::StepRequest data = RequestFor(family_, "grp", t);
    *g.mutable_upper() = data.upper();
    *g.mutable_inner() = data.inner();
    absl::StatusOr<v1::GroupStepReply> got = via_proxy_->StepGroup(g);
    absl::StatusOr<v1::GroupStepReply> want = reference_->StepGroup(g);
    ASSERT_TRUE(got.ok()) << "grp t=" << t << ": " << got.status();
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(got->members_size(), 2);
    for (int m = 0; m < 2; ++m) {
      EXPECT_EQ(got->members(m).code(), 0) << got->members(m).message();
      EXPECT_TRUE(SameBits(got->members(m).reply().x(), want->members(m).reply().x()))
          << "grp member " << m << " t=" << t;
    }
  }

  // Every key on exactly one replica, the one `proxy` routes it to.
  void ExpectPlaced(const ProxyProcess& proxy) {
    for (int i = 0; i <= kSessions; ++i) {
      const std::string key = i < kSessions ? Id(i) : "grp";
      const std::vector<int> holders = replicas_.Holders(key);
      ASSERT_EQ(holders.size(), 1u) << key << " on " << holders.size() << " replicas";
      EXPECT_EQ(holders[0], RoutedTo(proxy, key)) << key;
    }
  }

  // Every fence on every replica, as "r<i>:<key>".
  std::vector<std::string> AllFences() {
    std::vector<std::string> out;
    for (int r = 0; r < 4; ++r) {
      client::Client c = replicas_.Direct(r);
      v1::ServerInfo info;
      auto ctx = c.NewContext();
      EXPECT_TRUE(c.stub().GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info).ok());
      for (const v1::Fence& f : info.fences()) {
        out.push_back(absl::StrFormat("r%d:%s", r, f.routing_key()));
      }
    }
    return out;
  }
  // After an undone move: every key where the live ring puts it, no fence
  // left, every session at next_t = 4 (steps 1-3 applied once), and the
  // streams go on through the live proxy.
  void ExpectUndone() {
    ExpectPlaced(*live_);
    EXPECT_TRUE(AllFences().empty()) << absl::StrJoin(AllFences(), " ");
    for (int i = 0; i < kSessions; ++i) {
      absl::StatusOr<v1::SessionInfo> info = via_proxy_->GetSession(Id(i));
      ASSERT_TRUE(info.ok()) << Id(i) << ": " << info.status();
      EXPECT_EQ(info->next_t(), 4) << Id(i) << " lost or repeated an acknowledged step";
    }
    StepAll(4);
  }

  const FamilyCase family_ = testing::AllFamilyCases()[2];  // logistic_hpo, small
  testing::ReplicaSet replicas_{4, /*named=*/true};
  std::unique_ptr<ProxyProcess> live_;
  std::unique_ptr<client::Client> via_proxy_;
  std::unique_ptr<ServerProcess> reference_server_;
  std::unique_ptr<client::Client> reference_;
};

TEST_F(RebalanceTest, ScaleThreeToFourWithStreamsRunningLosesAndRepeatsNoStep) {
  constexpr int64_t kSteps = 12;
  // The streams: one thread steps every key through the live proxy,
  // checked against the reference server, while the main thread rebalances
  // once the streams are under way.
  std::mutex mu;
  std::condition_variable cv;
  int64_t done_t = 0;
  std::thread streams([&] {
    for (int64_t t = 1; t <= kSteps; ++t) {
      StepAll(t);
      std::lock_guard<std::mutex> lock(mu);
      done_t = t;
      cv.notify_all();
    }
  });
  // A failed ASSERT below returns early: the streams are joined on every
  // path, so the test fails with its message instead of aborting in
  // std::thread's destructor.
  auto join = absl::MakeCleanup([&] {
    if (streams.joinable()) streams.join();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done_t >= 3; });
  }
  ProxyProcess staging(replicas_.RingOf(4));  // the new ring, beside the live proxy
  ASSERT_EQ(staging.Start(), "");
  std::string out;
  ASSERT_EQ(Rebalance(staging, {}, &out), 0) << out;
  std::printf("%s", out.c_str());
  EXPECT_EQ(out.find("moved 0,"), std::string::npos) << "the new replica got no key";
  ASSERT_EQ(live_->Reload(replicas_.RingOf(4)), "");
  ASSERT_TRUE(WaitForRing(staging)) << live_->ErrorLog();
  std::move(join).Invoke();
  ASSERT_FALSE(HasFatalFailure());
  out.clear();
  ASSERT_EQ(Rebalance(*live_, {"--lift_tombstones"}, &out), 0) << out;
  EXPECT_NE(out.find("moved 0,"), std::string::npos) << out;
  ExpectPlaced(*live_);
  // Every key applied each step exactly once: next_t is kSteps + 1
  // (the streams' replies were already compared bit for bit).
  for (int i = 0; i < kSessions; ++i) {
    absl::StatusOr<v1::SessionInfo> info = via_proxy_->GetSession(Id(i));
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->next_t(), kSteps + 1) << Id(i);
  }
  StepAll(kSteps + 1);
}

TEST_F(RebalanceTest, KillNineOfSourceAndTargetMidMoveLeavesOneCopyAndRerunCompletes) {
  for (int64_t t = 1; t <= 3; ++t) StepAll(t);
  ProxyProcess staging(replicas_.RingOf(4));
  ASSERT_EQ(staging.Start(), "");
  // Stop after the fence of the first move: find it.
  std::string out;
  EXPECT_EQ(Rebalance(staging, {"--stop_after=fence"}, &out), 1) << out;
  int source = -1;
  v1::Fence fence;
  for (int r = 0; r < 4 && source < 0; ++r) {
    client::Client c = replicas_.Direct(r);
    v1::ServerInfo info;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info).ok());
    if (info.fences_size() > 0) {
      source = r;
      fence = info.fences(0);
    }
  }
  ASSERT_GE(source, 0) << "no fence after --stop_after=fence: " << out;
  const std::string key = fence.routing_key();
  const int target = fence.target()[1] - '0';
  // The fenced copy refuses steps, naming the new owner, also after kill -9.
  ASSERT_TRUE(replicas_.Restart(source)) << replicas_[source].banner();
  {
    client::ClientOptions opt{replicas_[source].target()};
    opt.max_attempts = 1;
    opt.moved_retry_seconds = 0;  // the refusal itself, not 300 s of retrying it
    client::Client c(opt);
    // A session of the key: the group's member steps on its own too.
    const std::string session = key == "grp" ? "grp.a" : key;
    absl::StatusOr<v1::StepReply> s = c.Step(RequestFor(family_, session, 4));
    EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable) << s.status();
    EXPECT_NE(s.status().message().find("moving to replica '" + fence.target() + "'"),
              std::string::npos)
        << s.status();
  }
  // Stop after the import: both copies exist, only the target's may step.
  out.clear();
  EXPECT_EQ(Rebalance(staging, {"--stop_after=import"}, &out), 1) << out;
  EXPECT_EQ(replicas_.Holders(key).size(), 2u) << key;
  ASSERT_TRUE(replicas_.Restart(target))
      << replicas_[target].banner();  // kill -9 of the target: its import is durable
  ASSERT_TRUE(replicas_.Restart(source)) << replicas_[source].banner();
  EXPECT_EQ(replicas_.Holders(key).size(), 2u) << key;
  // The rerun completes every move.
  out.clear();
  ASSERT_EQ(Rebalance(staging, {}, &out), 0) << out;
  std::printf("%s", out.c_str());
  ExpectPlaced(staging);
  ASSERT_EQ(live_->Reload(replicas_.RingOf(4)), "");
  ASSERT_TRUE(WaitForRing(staging)) << live_->ErrorLog();
  for (int i = 0; i < kSessions; ++i) {
    absl::StatusOr<v1::SessionInfo> info = via_proxy_->GetSession(Id(i));
    ASSERT_TRUE(info.ok()) << Id(i) << ": " << info.status();
    EXPECT_EQ(info->next_t(), 4) << Id(i) << " lost or repeated an acknowledged step";
  }
  StepAll(4);
  StepAll(5);
}

// The undo path: a move interrupted after its fence, then the ring changes
// back (the live proxy, 3 replicas).  The rerun lifts the fence on the
// source, whose frozen copy is the only one, and nothing moves.
TEST_F(RebalanceTest, ARerunUndoesAMoveStoppedAfterItsFenceWhenTheRingMapsTheKeyBack) {
  for (int64_t t = 1; t <= 3; ++t) StepAll(t);
  ProxyProcess staging(replicas_.RingOf(4));
  ASSERT_EQ(staging.Start(), "");
  std::string out;
  EXPECT_EQ(Rebalance(staging, {"--stop_after=fence"}, &out), 1) << out;
  ASSERT_EQ(AllFences().size(), 1u) << out;
  out.clear();
  ASSERT_EQ(Rebalance(*live_, {}, &out), 0) << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("moved 0, undone 1,"), std::string::npos) << out;
  ExpectUndone();
}

// The undo path after the import: both copies exist and only the target's
// may step; the ring maps the key back to the source.  The rerun drops the
// source's frozen copies and moves the target's back (lifting the source's
// tombstone just before), with no step lost or repeated.
TEST_F(RebalanceTest, ARerunMovesBackAMoveStoppedAfterItsImportWhenTheRingMapsTheKeyBack) {
  for (int64_t t = 1; t <= 3; ++t) StepAll(t);
  ProxyProcess staging(replicas_.RingOf(4));
  ASSERT_EQ(staging.Start(), "");
  std::string out;
  EXPECT_EQ(Rebalance(staging, {"--stop_after=import"}, &out), 1) << out;
  const std::vector<std::string> fences = AllFences();
  ASSERT_EQ(fences.size(), 1u) << out;
  const std::string key = fences[0].substr(3);
  const int source = fences[0][1] - '0';
  ASSERT_EQ(replicas_.Holders(key).size(), 2u) << key;
  // With the target down, whether it holds the key cannot be told: the
  // rerun stops (it needs every replica to answer) rather than guess, which
  // could lift the fence and leave two copies that accept steps.
  replicas_.Kill(3);
  out.clear();
  EXPECT_EQ(Rebalance(*live_, {"--lift_tombstones"}, &out), 1) << out;
  {
    client::Client c = replicas_.Direct(source);
    v1::ServerInfo info;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info).ok());
    ASSERT_EQ(info.fences_size(), 1) << "the source's fence was lifted with the target down";
    EXPECT_EQ(info.fences(0).routing_key(), key);
  }
  ASSERT_TRUE(replicas_.Restart(3)) << replicas_[3].banner();
  out.clear();
  ASSERT_EQ(Rebalance(*live_, {"--lift_tombstones"}, &out), 0) << out;
  std::printf("%s", out.c_str());
  EXPECT_NE(out.find("undone: " + key + " moved back from r3"), std::string::npos) << out;
  EXPECT_NE(out.find("moved 1, undone 1,"), std::string::npos) << out;
  ExpectUndone();
}

// The crash window of a group move: the target killed in the middle
// of ImportGroup, after its members were built and before the group record
// (the server's F2OBO_TEST_CRASH_AT point).  The members and the record are
// one store transaction, so the restarted target holds no member that a
// client could step there on its own (and lose when the rerun
// re-imports); the source's frozen copy is still the only one, and the
// rerun moves the group with its next_t intact.
TEST_F(RebalanceTest, GroupImportKilledBeforeItsRecordLeavesNoMemberOnTarget) {
  for (int64_t t = 1; t <= 3; ++t) StepAll(t);
  const std::vector<int> holders = replicas_.Holders("grp");
  ASSERT_EQ(holders.size(), 1u);
  const int source = holders[0];
  ASSERT_NE(source, 3);
  // A ring of r3 alone: every key, the group included, moves there.
  ProxyProcess staging(Ring{{"r3", replicas_[3].target()}});
  ASSERT_EQ(staging.Start(), "");
  setenv("F2OBO_TEST_CRASH_AT", "import_group_before_commit", 1);
  ASSERT_TRUE(replicas_.Restart(3)) << replicas_[3].banner();
  unsetenv("F2OBO_TEST_CRASH_AT");
  std::string out;
  EXPECT_EQ(Rebalance(staging, {}, &out), 1) << out;
  {
    client::Client c = replicas_.Direct(3);
    v1::ServerInfo info;
    auto ctx = c.NewContext();
    ASSERT_FALSE(c.stub().GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info).ok())
        << "the target did not die in ImportGroup: " << out;
  }
  ASSERT_TRUE(replicas_.Restart(3)) << replicas_[3].banner();
  {
    client::Client target = replicas_.Direct(3);
    EXPECT_EQ(target.GetGroup("grp").status().code(), absl::StatusCode::kNotFound);
    for (const char* member : {"grp.a", "grp.b"}) {
      EXPECT_EQ(target.GetSession(member).status().code(), absl::StatusCode::kNotFound)
          << member << " survived a crash before its group record";
      // A client stepping the member directly on the target is refused.
      absl::StatusOr<v1::StepReply> step = target.Step(RequestFor(family_, member, 4));
      EXPECT_EQ(step.status().code(), absl::StatusCode::kNotFound) << member;
    }
    // The source's copy is frozen: it refuses the step too.
    absl::StatusOr<v1::StepReply> step =
        replicas_.Direct(source).Step(RequestFor(family_, "grp.a", 4));
    EXPECT_EQ(step.status().code(), absl::StatusCode::kUnavailable) << step.status();
  }
  out.clear();
  ASSERT_EQ(Rebalance(staging, {}, &out), 0) << out;
  std::printf("%s", out.c_str());
  ExpectPlaced(staging);
  absl::StatusOr<v1::GroupInfo> group = replicas_.Direct(3).GetGroup("grp");
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->members_size(), 2);
  for (const v1::SessionInfo& m : group->members()) {
    EXPECT_EQ(m.next_t(), 4) << m.session_id() << " lost or repeated a step";
  }
  ASSERT_EQ(live_->Reload(Ring{{"r3", replicas_[3].target()}}), "");
  ASSERT_TRUE(WaitForRing(staging)) << live_->ErrorLog();
  StepAll(4);  // every stream, the group's included, goes on from t = 4
}

}  // namespace
}  // namespace f2obo
