// How long a lost replica's sessions wait, through nginx, on a shared
// PostgreSQL store (a benchmark, not a test).  Each trial: three replicas
// on one PostgreSQL (fsync on) behind nginx with the shared store's
// failover config (gen_proxy_config.py --shared_store, as the tests and
// deploy/ run it), streams of steps over the three problem classes and an
// oracle session (tests/server/store/postgres/failover_streams.h) running;
// once every stream has stepped, the replica holding a randomly drawn
// session is killed with -9.  For each session the proxy routed to it: the
// time from the kill to the arrival of its next acknowledged step whose
// request was sent after the kill (served by another replica, which loaded
// the session from the store).  Every trial has fresh replicas, proxy and
// sessions; the database is one for the run.
//
//   build/bench/failover_bench [--trials=20] [--sessions=8] [--seed=1]
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/server/proxy_process.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/failover_streams.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo {
namespace {

using testing::Clock;

int Flag(int argc, char** argv, const char* name, int fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      return std::atoi(argv[i] + prefix.size());
    }
  }
  return fallback;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

// The replica the proxy routes `id` to now: its --replica_name.
std::string RoutedTo(client::Client& via_proxy, const std::string& id) {
  v1::GetServerInfoRequest req;
  req.set_routing_key(id);
  v1::ServerInfo info;
  auto ctx = via_proxy.NewContext();
  const grpc::Status s = via_proxy.stub().GetServerInfo(ctx.get(), req, &info);
  return s.ok() ? info.replica_name() : "";
}

int Run(int argc, char** argv) {
  const int trials = Flag(argc, argv, "trials", 20);
  const int builtin = Flag(argc, argv, "sessions", 8) - 1;
  std::mt19937_64 rng(static_cast<uint64_t>(Flag(argc, argv, "seed", 1)));
  absl::StatusOr<std::unique_ptr<testing::PgCluster>> pg = testing::PgCluster::Start();
  if (!pg.ok()) {
    std::fprintf(stderr, "PostgreSQL: %s\n", pg.status().ToString().c_str());
    return 1;
  }
  testing::ScopedEnv password("PGPASSWORD", (*pg)->password());
  const std::string store = "--store=" + (*pg)->Uri((*pg)->primary(), /*with_password=*/false);
  testing::ServerProcess probe({"--data_dir="});
  client::Client probe_client(client::ClientOptions{probe.target()});

  std::vector<double> worst, all;  // per trial: its slowest session; every session
  std::printf("trial  victim  sessions  slowest (ms)\n");
  for (int trial = 0; trial < trials; ++trial) {
    testing::ReplicaSet replicas(3, /*named=*/true, {store});
    if (!replicas.NotStarted().empty()) {
      std::fprintf(stderr, "replica did not start: %s\n", replicas.NotStarted().c_str());
      return 1;
    }
    testing::ProxyProcess proxy(replicas.RingOf(), /*shared_store=*/true);
    if (std::string e = proxy.Start(); !e.empty()) {
      std::fprintf(stderr, "nginx: %s\n", e.c_str());
      return 1;
    }
    absl::StatusOr<std::vector<testing::StreamCase>> cases =
        testing::FailoverStreams(absl::StrCat("b", trial), builtin, probe_client);
    if (!cases.ok()) {
      std::fprintf(stderr, "%s\n", cases.status().ToString().c_str());
      return 1;
    }
    testing::StreamRun run(
        *cases, [&](int) { return proxy.target(); }, 1000000);
    if (absl::Status s = run.CreateSessions(); !s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    run.Start();
    // Warm: every stream has stepped twice (its session loaded where the
    // proxy routes it).
    const std::vector<int64_t> none(cases->size(), 1);
    if (!run.AwaitEachBeyond(none, std::chrono::seconds(60))) {
      std::fprintf(stderr, "streams did not start: %s\n", run.Failure().c_str());
      return 1;
    }
    client::Client via_proxy(client::ClientOptions{proxy.target()});
    const std::string victim_name = RoutedTo(via_proxy, (*cases)[rng() % cases->size()].id);
    std::vector<int> on_victim;
    for (size_t i = 0; i < cases->size(); ++i) {
      if (RoutedTo(via_proxy, (*cases)[i].id) == victim_name) on_victim.push_back(i);
    }
    const int victim = std::atoi(victim_name.c_str() + 1);  // "r<i>"
    const std::vector<int64_t> before = run.Acknowledged();
    const Clock::time_point killed = Clock::now();
    replicas.Lose(victim);
    const bool resumed = run.AwaitEachBeyond(before, std::chrono::seconds(60));
    run.Stop();
    run.Join();
    if (!resumed || !run.Failure().empty()) {
      std::fprintf(stderr, "trial %d: streams did not resume: %s\n", trial, run.Failure().c_str());
      return 1;
    }
    double slowest = 0;
    for (int i : on_victim) {
      for (const testing::Ack& a : run.results()[i].acks) {
        if (a.sent < killed) continue;
        const double ms = Ms(a.at - killed);
        all.push_back(ms);
        slowest = std::max(slowest, ms);
        break;
      }
    }
    worst.push_back(slowest);
    std::printf("%5d  %6s  %8zu  %12.1f\n", trial, victim_name.c_str(), on_victim.size(), slowest);
    std::fflush(stdout);
  }
  std::printf(
      "\n%d trials, %zu sessions of a lost replica: time to their next acknowledged step\n"
      "per session: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n"
      "per trial (its slowest session): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
      trials, all.size(), Percentile(all, 0.5), Percentile(all, 0.99),
      *std::max_element(all.begin(), all.end()), Percentile(worst, 0.5), Percentile(worst, 0.99),
      *std::max_element(worst.begin(), worst.end()));
  return 0;
}

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) { return f2obo::Run(argc, argv); }
