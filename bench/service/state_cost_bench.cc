// What one step costs as a multi-task session grows, over real
// gRPC: a fresh f2obo-server (default store, --durability=sync) on
// loopback, an rsvrb session on multitask_quadratic (d1 = d2 = 4, m tasks),
// N tasks touched (steps of up to 500 tasks), then S one-task steps on
// tasks already touched, timed at the client.  Each N is printed beside the
// first (N = 100) of the same run: the ratio the goal bounds
// (<= 1.5: a step's price follows the step, not the session).  Also the
// server's resident memory per touched task against the task's serialized
// bytes (the goal: <= 2x; also as the slope over the second half of the
// tasks touched), and the time a restarted server takes to load
// the session (kill -9, then until it answers).  And what the checkpoints
// cost (every --checkpoint_every = 100th step writes one): the store's size
// on disk after the timed steps, and the timed steps that wrote a
// checkpoint against the others (their mean, ms).
//
// Usage: state_cost_bench [m] [N ...]   (default: 10000 100 1000 10000)
// e.g.   ./build/bench/state_cost_bench 1000000 100 10000 1000000
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/service/rsvrb_workload.h"
#include "client/client.h"
#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using Clock = std::chrono::steady_clock;
using bench::kDim;
using bench::kPool;
constexpr int kTimedSteps = 300;
constexpr int kPerStep = 500;
// rsvrb's block per task (core/multitask/rsvrb.cc): y, y_prev, u, w, v, z
// (d each), J, H (d x d each), meta (2), end to end in one aux vector with
// its 8-byte length in the encoding: 472 bytes at d = 4.  (Until the block
// was one part each of the 9 vectors had its own length, 536 bytes; this
// bench said 504, a vector short.)
constexpr double kTaskBytes = 8.0 * (1 + 6 * kDim + 2 * kDim * kDim + 2);

// The bytes of the files under `dir` (the database, its WAL, side files).
double DirMiB(const std::string& dir) {
  std::error_code ec;
  uintmax_t bytes = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (f.is_regular_file(ec)) bytes += f.file_size(ec);
  }
  return static_cast<double>(bytes) / (1 << 20);
}

int Run(int m, const std::vector<int>& touched_counts) {
  const testing::QuadraticTasks pool(kPool, kDim, kDim, 7);
  std::printf("rsvrb, multitask_quadratic d1 = d2 = %d, m = %d, default store, sync\n", kDim, m);
  std::printf("%10s %12s %12s %10s %14s %14s %12s %12s %10s %12s %12s\n", "touched", "step p50 ms",
              "p90 ms", "vs first", "RSS KiB/task", "x serialized", "slope x ser.", "reload s",
              "store MiB", "ckpt step ms", "other ms");
  double first_p50 = 0;
  for (int n : touched_counts) {
    const std::string max_tasks = "--max_tasks=" + std::to_string(m);
    testing::ServerProcess server({"--durability=sync", max_tasks});
    if (!server.started()) {
      std::fprintf(stderr, "server did not start: %s\n", server.banner().c_str());
      return 1;
    }
    client::Client c(client::ClientOptions{server.target()});
    v1::CreateSessionRequest create;
    create.set_session_id("mt");
    *create.mutable_spec() = bench::RsvrbSpec(m);
    if (auto info = c.CreateSession(create); !info.ok()) {
      std::fprintf(stderr, "create: %s\n", info.status().ToString().c_str());
      return 1;
    }
    const double rss_before = bench::StatusKiB(server.pid(), "VmRSS:");
    int64_t t = 1;
    // Touch tasks 0, s, 2s, ... spread over [0, m).
    const int stride = std::max(1, m / std::max(1, n));
    std::vector<int> ids;
    for (int k = 0; k < n; ++k)
      ids.push_back(static_cast<int>((static_cast<int64_t>(k) * stride) % m));
    double rss_half = 0;
    size_t half_tasks = 0;
    for (size_t k = 0; k < ids.size(); k += kPerStep) {
      if (half_tasks == 0 && 2 * k >= ids.size()) {
        rss_half = bench::StatusKiB(server.pid(), "VmRSS:");
        half_tasks = k;
      }
      std::vector<int> chunk(ids.begin() + k, ids.begin() + std::min(ids.size(), k + kPerStep));
      if (auto r = c.Step(bench::TaskStepRequest("mt", t++, chunk, pool)); !r.ok()) {
        std::fprintf(stderr, "touch: %s\n", r.status().ToString().c_str());
        return 1;
      }
    }
    const double rss_after = bench::StatusKiB(server.pid(), "VmRSS:");
    std::vector<double> ms;
    double ckpt_ms = 0, other_ms = 0;
    int ckpt_steps = 0;
    for (int k = 0; k < kTimedSteps; ++k) {
      const int task = ids[(static_cast<size_t>(k) * 7919) % ids.size()];
      const auto start = Clock::now();
      if (auto r = c.Step(bench::TaskStepRequest("mt", t++, {task}, pool)); !r.ok()) {
        std::fprintf(stderr, "step: %s\n", r.status().ToString().c_str());
        return 1;
      }
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      if ((t - 1) % 100 == 0) {  // the default --checkpoint_every
        ckpt_ms += ms.back();
        ++ckpt_steps;
      } else {
        other_ms += ms.back();
      }
    }
    const double store_mib = DirMiB(server.data_dir());
    std::sort(ms.begin(), ms.end());
    const double p50 = ms[ms.size() / 2], p90 = ms[ms.size() * 9 / 10];
    if (first_p50 == 0) first_p50 = p50;
    const double per_task = (rss_after - rss_before) / n;
    // The slope over the second half of the tasks touched: what one more
    // task costs, without the server's own growth over its first steps
    // (SQLite's page cache, gRPC's buffers, allocator arenas).
    const double slope = half_tasks > 0 && static_cast<size_t>(n) > half_tasks
                             ? (rss_after - rss_half) / static_cast<double>(n - half_tasks)
                             : per_task;
    // Recovery: kill -9, restart on the same data, time until GetSession.
    const std::string dir = server.data_dir();
    server.Stop(SIGKILL);
    const auto restart = Clock::now();
    testing::ServerProcess again({"--durability=sync", max_tasks}, dir);
    client::Client c2(client::ClientOptions{again.target()});
    const bool back = again.started() && c2.GetSession("mt").ok();
    const double reload = std::chrono::duration<double>(Clock::now() - restart).count();
    std::printf("%10d %12.3f %12.3f %10.2f %14.2f %14.2f %12.2f %12.3f %10.1f %12.2f %12.3f%s\n", n,
                p50, p90, p50 / first_p50, per_task, per_task * 1024.0 / kTaskBytes,
                slope * 1024.0 / kTaskBytes, reload, store_mib,
                ckpt_steps > 0 ? ckpt_ms / ckpt_steps : 0.0,
                other_ms / std::max(1, kTimedSteps - ckpt_steps), back ? "" : " (not back!)");
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 10000;
  std::vector<int> counts;
  for (int i = 2; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {100, 1000, 10000};
  return f2obo::Run(m, counts);
}
