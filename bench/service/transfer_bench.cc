// What moving a large multi-task session costs, over real
// gRPC on loopback: a fresh f2obo-server (source) holding an rsvrb session
// on multitask_quadratic (d1 = d2 = 4, m tasks) with N tasks touched; then
//  * export: ExportSessionStream read to the end by this client (chunks
//    counted and dropped), or with --unary one ExportSession (the servers
//    started with --max_message_bytes=2000000000 so that it can pass;
//    --unary64 keeps their default, 64 MiB);
//  * import: the same export piped into a second fresh server
//    (client::CopySession: ExportSessionStream -> ImportSessionStream), or
//    with --unary ExportSession then ImportSession;
//  * fork: ForkSession of the source's current state (server-internal);
//  * after each of import and fork, the new session's first step (one
//    task): what the new session's store write left for it to write.
// For each: wall time, and the peak resident memory of the server doing it
// above its resident memory just before (VmHWM after resetting it through
// /proc/<pid>/clear_refs; the importing server's peak also above the
// session it ends up holding); and this client's own peak.
//
// Usage: transfer_bench [--unary|--unary64] m N
// e.g.   ./build/bench/transfer_bench 1000000 1000000
// F2OBO_SERVER_BINARY runs another build's server (the A/B of before/after).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/service/rsvrb_workload.h"
#include "client/client.h"
#include "client/session_transfer.h"
#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using Clock = std::chrono::steady_clock;
using bench::kDim;
using bench::kPool;
constexpr int kPerStep = 500;

double Rss(pid_t pid) { return bench::StatusKiB(pid, "VmRSS:"); }
double Peak(pid_t pid) { return bench::StatusKiB(pid, "VmHWM:"); }
// Resets VmHWM to the current VmRSS (Linux >= 4.0).
void ResetPeak(const std::string& pid) { std::ofstream("/proc/" + pid + "/clear_refs") << "5"; }

// CPU seconds (user + system) process `pid` has used: on a loaded machine
// a server's share of the cores varies, its CPU time much less.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  // Fields after the command's closing parenthesis: state is field 3,
  // utime 14, stime 15.
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

void Report(const char* what, const absl::Status& s, double seconds, double before_kib,
            double peak_kib, double after_kib, double cpu_seconds) {
  std::printf(
      "%-8s %-10s %9.2f s (server CPU %6.2f s)  server RSS before %8.0f MiB  peak +%7.0f MiB  "
      "after +%7.0f MiB\n",
      what, s.ok() ? "ok" : absl::StatusCodeToString(s.code()).c_str(), seconds, cpu_seconds,
      before_kib / 1024, (peak_kib - before_kib) / 1024, (after_kib - before_kib) / 1024);
  if (!s.ok()) std::printf("         %s\n", std::string(s.message().substr(0, 300)).c_str());
  std::fflush(stdout);
}

int Run(bool unary, bool raise_limit, int m, int n) {
  const testing::QuadraticTasks pool(kPool, kDim, kDim, 7);
  const std::string max_tasks = "--max_tasks=" + std::to_string(m);
  // The servers' defaults but for the task limit and (for --unary) a
  // message limit the whole export fits in; the source keeps no rollback
  // checkpoints (measured by state_cost_bench, not here).
  std::vector<std::string> flags = {max_tasks};
  if (unary && raise_limit) flags.push_back("--max_message_bytes=2000000000");
  std::vector<std::string> source_flags = flags;
  source_flags.push_back("--max_checkpoints=0");
  testing::ServerProcess source(source_flags), target(flags);
  if (!source.started() || !target.started()) {
    std::fprintf(stderr, "servers did not start: %s %s\n", source.banner().c_str(),
                 target.banner().c_str());
    return 1;
  }
  client::ClientOptions o{source.target()};
  o.max_message_bytes = 2000000000;
  o.rpc_timeout_seconds = 3600;
  client::Client c(o);
  o.target = target.target();
  client::Client t(o);
  v1::CreateSessionRequest create;
  create.set_session_id("mt");
  *create.mutable_spec() = bench::RsvrbSpec(m);
  if (auto info = c.CreateSession(create); !info.ok()) {
    std::fprintf(stderr, "create: %s\n", info.status().ToString().c_str());
    return 1;
  }
  const auto grow = Clock::now();
  const int stride = std::max(1, m / std::max(1, n));
  int64_t step = 1;
  for (int k = 0; k < n; k += kPerStep) {
    std::vector<int> tasks;
    for (int j = k; j < std::min(n, k + kPerStep); ++j) {
      tasks.push_back(static_cast<int>((static_cast<int64_t>(j) * stride) % m));
    }
    if (auto r = c.Step(bench::TaskStepRequest("mt", step++, tasks, pool)); !r.ok()) {
      std::fprintf(stderr, "touch: %s\n", r.status().ToString().c_str());
      return 1;
    }
  }
  std::printf("%s, m = %d, %d tasks touched in %.1f s; source RSS %.0f MiB, target %.0f MiB\n",
              unary ? "unary ExportSession/ImportSession" : "streamed", m, n, Seconds(grow),
              Rss(source.pid()) / 1024, Rss(target.pid()) / 1024);

  const std::string spid = std::to_string(source.pid()), tpid = std::to_string(target.pid());
  // Export to this client.
  {
    const double before = Rss(source.pid()), cpu = CpuSeconds(source.pid());
    ResetPeak(spid);
    const auto start = Clock::now();
    absl::Status s;
    int64_t bytes = 0, chunks = 0;
    if (unary) {
      v1::ExportSessionRequest req;
      req.set_session_id("mt");
      v1::SessionExport ex;
      auto ctx = c.NewContext();
      s = client::FromGrpc(c.stub().ExportSession(ctx.get(), req, &ex));
      bytes = static_cast<int64_t>(ex.ByteSizeLong());
      chunks = 1;
    } else {
      s = client::ExportSessionChunks(c, "mt", [&](const v1::SessionChunk& chunk) {
        bytes += static_cast<int64_t>(chunk.ByteSizeLong());
        ++chunks;
        return absl::OkStatus();
      });
    }
    Report("export", s, Seconds(start), before, Peak(source.pid()), Rss(source.pid()),
           CpuSeconds(source.pid()) - cpu);
    std::printf("         %lld bytes in %lld message(s)\n", static_cast<long long>(bytes),
                static_cast<long long>(chunks));
  }
  // Import into the target (export from the source, import into the target).
  {
    const double before = Rss(target.pid()), source_before = Rss(source.pid());
    const double cpu = CpuSeconds(target.pid());
    ResetPeak(tpid);
    ResetPeak(spid);
    const auto start = Clock::now();
    absl::Status s;
    if (unary) {
      v1::ExportSessionRequest req;
      req.set_session_id("mt");
      v1::ImportSessionRequest import;
      auto ctx = c.NewContext();
      s = client::FromGrpc(c.stub().ExportSession(ctx.get(), req, import.mutable_session()));
      if (s.ok()) {
        v1::SessionInfo info;
        auto ictx = t.NewContext();
        s = client::FromGrpc(t.stub().ImportSession(ictx.get(), import, &info));
      }
    } else {
      s = client::CopySession(c, t, "mt").status();
    }
    Report("import", s, Seconds(start), before, Peak(target.pid()), Rss(target.pid()),
           CpuSeconds(target.pid()) - cpu);
    std::printf("         (the source meanwhile: peak +%.0f MiB)\n",
                (Peak(source.pid()) - source_before) / 1024);
  }
  // The first step of a new session: what its store write left to it (a
  // whole state in the row makes it write every part).
  const auto first_step = [&](client::Client& on, pid_t pid, const std::string& id) {
    const double before = Rss(pid), cpu = CpuSeconds(pid);
    ResetPeak(std::to_string(pid));
    const auto start = Clock::now();
    const absl::Status s = on.Step(bench::TaskStepRequest(id, step, {0}, pool)).status();
    Report("  step 1", s, Seconds(start), before, Peak(pid), Rss(pid), CpuSeconds(pid) - cpu);
  };
  first_step(t, target.pid(), "mt");
  // Fork on the source.
  {
    const double before = Rss(source.pid()), cpu = CpuSeconds(source.pid());
    ResetPeak(spid);
    const auto start = Clock::now();
    v1::ForkSessionRequest fork;
    fork.set_session_id("mt");
    fork.set_new_session_id("mt.fork");
    const absl::Status s = c.ForkSession(fork).status();
    Report("fork", s, Seconds(start), before, Peak(source.pid()), Rss(source.pid()),
           CpuSeconds(source.pid()) - cpu);
  }
  first_step(c, source.pid(), "mt.fork");
  std::printf("this client's peak RSS: %.0f MiB\n", Peak(getpid()) / 1024);
  return 0;
}

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  bool unary = false, raise_limit = true;
  int arg = 1;
  if (argc > arg && std::strncmp(argv[arg], "--unary", 7) == 0) {
    unary = true;
    raise_limit = std::strcmp(argv[arg], "--unary64") != 0;
    ++arg;
  }
  const int m = argc > arg ? std::atoi(argv[arg]) : 200000;
  const int n = argc > arg + 1 ? std::atoi(argv[arg + 1]) : m;
  return f2obo::Run(unary, raise_limit, m, n);
}
