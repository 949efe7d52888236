// Replicas sharing one PostgreSQL store behind nginx (its config generated
// by deploy/proxy/gen_proxy_config.py --shared_store, as deploy/ runs it),
// every process real and on loopback: a replica lost for good (kill -9, its
// data directory deleted, never started again) at five random moments
// while eight streams over the three problem classes and an oracle session
// run through the proxy.  Its sessions' calls go to the next replica of the
// ring, which loads them from the store: every stream finishes, no
// acknowledged step is lost or applied twice, every reply and each
// session's final state equal a fault-free run's bit for bit.  After each
// loss a fresh replica joins and the proxy's ring is reloaded: adding a
// replica moves no bytes.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/client.h"
#include "tests/server/proxy_process.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/failover_streams.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo {
namespace {

using testing::PgCluster;
using testing::ProxyProcess;
using testing::ReplicaSet;
using testing::ServerProcess;
using testing::StreamRun;

constexpr int kBuiltinStreams = 7;  // and the oracle session: 8 streams
constexpr int64_t kSteps = 30;
constexpr int kLosses = 5;

// The seed of the loss schedule: F2OBO_FAILOVER_SEED reruns a logged one.
uint64_t Seed() {
  const char* s = std::getenv("F2OBO_FAILOVER_SEED");
  return s != nullptr && *s ? std::strtoull(s, nullptr, 10) : 20261207;
}

TEST(SharedStoreFailover, ReplicasLostForGoodBehindNginxLoseNoStepAndRepeatNone) {
  absl::StatusOr<std::unique_ptr<PgCluster>> pg = PgCluster::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  testing::ScopedEnv password("PGPASSWORD", (*pg)->password());
  ReplicaSet replicas(3, /*named=*/true,
                      {"--store=" + (*pg)->Uri((*pg)->primary(), /*with_password=*/false)});
  ASSERT_EQ(replicas.NotStarted(), "");
  ProxyProcess proxy(replicas.RingOf(), /*shared_store=*/true);
  ASSERT_EQ(proxy.Start(), "") << proxy.config();

  // The fault-free run, on a server of its own (in memory).
  ServerProcess reference({"--data_dir="});
  ASSERT_TRUE(reference.started()) << reference.Stderr();
  client::Client ref_client(client::ClientOptions{reference.target()});
  absl::StatusOr<std::vector<testing::StreamCase>> cases =
      testing::FailoverStreams("fo", kBuiltinStreams, ref_client);
  ASSERT_TRUE(cases.ok()) << cases.status();
  absl::StatusOr<testing::Reference> ref = testing::RunReference(ref_client, *cases, kSteps);
  ASSERT_TRUE(ref.ok()) << ref.status();

  StreamRun run(
      *cases, [&](int) { return proxy.target(); }, kSteps);
  ASSERT_TRUE(run.CreateSessions().ok());

  // Five moments (a count of acknowledged steps over all streams) and the
  // replica lost at each, drawn from the seed and logged.
  const uint64_t seed = Seed();
  std::mt19937_64 rng(seed);
  const int64_t total = static_cast<int64_t>(cases->size()) * kSteps;
  std::vector<int64_t> moments;
  while (static_cast<int>(moments.size()) < kLosses) {
    const int64_t m = total / 10 + static_cast<int64_t>(rng() % (total * 7 / 10));
    if (std::find(moments.begin(), moments.end(), m) == moments.end()) moments.push_back(m);
  }
  std::sort(moments.begin(), moments.end());
  std::printf("seed %llu (F2OBO_FAILOVER_SEED): losses at %s of %lld acknowledged steps\n",
              static_cast<unsigned long long>(seed), absl::StrJoin(moments, ", ").c_str(),
              static_cast<long long>(total));

  run.Start();
  for (int64_t moment : moments) {
    ASSERT_GE(run.AwaitTotal(moment, std::chrono::seconds(120)), moment)
        << "the streams stalled: " << run.Failure();
    std::vector<int> live;
    for (int r = 0; r < replicas.size(); ++r) {
      if (!replicas.lost(r)) live.push_back(r);
    }
    const int victim = live[rng() % live.size()];
    const std::vector<int64_t> before = run.Acknowledged();
    ASSERT_EQ(replicas.Lose(victim), 128 + SIGKILL);
    std::printf("after %lld acknowledged steps: replica r%d lost for good\n",
                static_cast<long long>(moment), victim);
    // Every stream steps again, its lost replica's sessions through the
    // proxy's next upstream, still with the lost one in the ring.
    ASSERT_TRUE(run.AwaitEachBeyond(before, std::chrono::seconds(60)))
        << "a stream did not step again after r" << victim << " was lost: " << run.Failure();
    // A fresh replica joins (no data to copy: the store is shared) and
    // the ring is reloaded without the lost one.
    const int fresh = replicas.Add();
    ASSERT_TRUE(replicas[fresh].started()) << replicas[fresh].Stderr();
    ASSERT_EQ(proxy.Reload(replicas.LiveRing()), "");
  }
  run.Join();

  EXPECT_EQ(testing::CompareWithReference(run, *ref, [&](int) { return proxy.target(); }), "");
  for (size_t i = 0; i < cases->size(); ++i) {
    const std::string& id = (*cases)[i].id;
    absl::StatusOr<std::string> next_t =
        (*pg)->Query((*pg)->primary(), "SELECT next_t FROM f2obo_sessions WHERE id = '" + id + "'");
    ASSERT_TRUE(next_t.ok()) << next_t.status();
    EXPECT_EQ(*next_t, std::to_string(kSteps + 1)) << id;
    const testing::StreamResult& r = run.results()[i];
    int replayed = 0;
    for (const testing::Ack& a : r.acks) replayed += a.reply.replayed();
    std::printf("%s: %zu steps acknowledged, %d attempts refused and retried, %d replayed\n",
                id.c_str(), r.acks.size(), r.refused, replayed);
  }
}

}  // namespace
}  // namespace f2obo
