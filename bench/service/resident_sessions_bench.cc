// A replica of a shared store (--store=postgresql://...) holds memory for
// the sessions in use only: one PostgreSQL (the tests' throwaway cluster,
// fsync on), a database of N small sessions (created through a first
// replica), then a fresh replica whose clients step K of them; its resident
// memory (VmRSS) is printed beside the same measurement with a database of
// 100 sessions, in the same run: the ratio the goal bounds (~1: memory
// follows the sessions in use, not the database).  For scale, the same
// fresh replica made to hold every one of the N (each read once, with
// budgets above N) is printed too.
//
// Usage: resident_sessions_bench [N] [K] [steps]   (default: 10000 10 20)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/service/rsvrb_workload.h"
#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo {
namespace {

using Clock = std::chrono::steady_clock;

struct Run {
  double rss_mib = 0;
  double seconds = 0;  // the K sessions' steps, on the fresh replica
};

class Bench {
 public:
  explicit Bench(testing::PgCluster* pg) : pg_(pg) {
    f_ = testing::AllFamilyCases()[2];
    spec_ = testing::SpecFor(f_, testing::AllAlgorithms()[0], 7);
    spec_.mutable_metrics()->set_exact_every(0);
  }

  // Database `db` with `n` sessions "s0".."s<n-1>", created through a
  // replica of its own (8 clients at once).
  void Fill(const std::string& db, int n) {
    if (!pg_->CreateDatabase(db).ok()) std::abort();
    testing::ServerProcess maker({"--store=" + pg_->UriOf(pg_->primary(), db)});
    if (!maker.started()) std::abort();
    std::atomic<int> next{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 8; ++w) {
      threads.emplace_back([&] {
        client::Client c(client::ClientOptions{maker.target()});
        for (int i = next++; i < n; i = next++) {
          v1::CreateSessionRequest req;
          req.set_session_id("s" + std::to_string(i));
          *req.mutable_spec() = spec_;
          if (!c.CreateSession(req).ok()) std::abort();
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // A fresh replica of `db`: K sessions stepped `steps` times each (one
  // client per session), then its VmRSS.
  Run InUse(const std::string& db, int k, int steps, std::vector<std::string> flags = {}) {
    flags.push_back("--store=" + pg_->UriOf(pg_->primary(), db));
    testing::ServerProcess replica(flags);
    if (!replica.started()) std::abort();
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    for (int s = 0; s < k; ++s) {
      threads.emplace_back([&, s] {
        client::Client c(client::ClientOptions{replica.target()});
        const std::string id = "s" + std::to_string(s);
        for (int t = 1; t <= steps; ++t) {
          if (!c.Step(testing::RequestFor(f_, id, t)).ok()) std::abort();
        }
      });
    }
    for (std::thread& t : threads) t.join();
    Run r;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.rss_mib = bench::StatusKiB(replica.pid(), "VmRSS:") / 1024.0;
    return r;
  }

  // A fresh replica made to hold all `n` sessions (each read once).
  double AllResident(const std::string& db, int n) {
    const std::string cap = std::to_string(n + 10);
    testing::ServerProcess replica({"--store=" + pg_->UriOf(pg_->primary(), db),
                                    "--max_sessions=" + cap, "--max_resident_sessions=" + cap});
    if (!replica.started()) std::abort();
    client::Client c(client::ClientOptions{replica.target()});
    for (int i = 0; i < n; ++i) {
      if (!c.GetSession("s" + std::to_string(i)).ok()) std::abort();
    }
    return bench::StatusKiB(replica.pid(), "VmRSS:") / 1024.0;
  }

 private:
  testing::PgCluster* const pg_;
  testing::FamilyCase f_;
  v1::SessionSpec spec_;
};

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int k = argc > 2 ? std::atoi(argv[2]) : 10;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 20;
  absl::StatusOr<std::unique_ptr<f2obo::testing::PgCluster>> pg =
      f2obo::testing::PgCluster::Start();
  if (!pg.ok()) {
    std::fprintf(stderr, "PostgreSQL: %s\n", std::string(pg.status().message()).c_str());
    return 1;
  }
  // The cluster's password comes from the environment, as a deployment's.
  setenv("PGPASSWORD", (*pg)->password().c_str(), 1);
  f2obo::Bench bench(pg->get());
  bench.Fill("small", 100);
  const auto fill_start = std::chrono::steady_clock::now();
  bench.Fill("large", n);
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - fill_start).count();
  const f2obo::Run small = bench.InUse("small", k, steps);
  const f2obo::Run large = bench.InUse("large", k, steps);
  const double all = bench.AllResident("large", n);
  std::printf("database of %d sessions created in %.1f s (8 clients)\n", n, fill_s);
  std::printf("%-44s %10s %12s\n", "fresh replica", "VmRSS MiB", "steps s");
  std::printf("%-44s %10.1f %12.2f\n",
              ("database of 100, " + std::to_string(k) + " in use").c_str(), small.rss_mib,
              small.seconds);
  std::printf("%-44s %10.1f %12.2f\n",
              ("database of " + std::to_string(n) + ", " + std::to_string(k) + " in use").c_str(),
              large.rss_mib, large.seconds);
  std::printf("%-44s %10.1f %12s\n", ("database of " + std::to_string(n) + ", all held").c_str(),
              all, "-");
  std::printf("ratio (database of %d / of 100, %d in use): %.3f\n", n, k,
              large.rss_mib / small.rss_mib);
  std::printf("per session held: %.1f KiB\n", (all - small.rss_mib) * 1024.0 / (n - 100));
  return 0;
}
