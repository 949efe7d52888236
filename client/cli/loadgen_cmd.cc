// `bench` (alias `loadgen`): a bounded load generator.  Creates --sessions sessions, drives
// each with synthetic batches over its own Steps stream from --threads
// threads, reports throughput and client-observed step latency
// percentiles, and deletes its sessions at the end (also after errors, the
// --max_seconds limit or Ctrl-C).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"
#include "client/session_routing.h"
#include "f2obo/v1/convert.h"

namespace f2obo::cli {
namespace {

using Clock = std::chrono::steady_clock;
using Stream = grpc::ClientReaderWriter<v1::StepRequest, v1::StepReply>;

volatile std::sig_atomic_t g_interrupted = 0;
void OnSigint(int) { g_interrupted = 1; }

constexpr int kPool = 8;  // distinct synthetic steps, reused cyclically

// Synthetic data of step k for the session shape in `info`: Gaussian
// features with labels from a fixed random linear teacher (or targets from
// a linear model), or random M, c, d for the quadratic family.
StepData SyntheticStep(const v1::SessionInfo& info, int rows, std::mt19937_64& rng) {
  std::normal_distribution<double> normal;
  const v1::FamilySpec& f = info.spec().family();
  StepData step;
  if (f.name() == "quadratic") {
    const int d1 = info.x_dim(), d2 = v1::YDimOf(info);
    step.inner.M = Matrix::NullaryExpr(d2, d1, [&] { return 0.5 * normal(rng); });
    step.inner.c = Vector::NullaryExpr(d2, [&] { return normal(rng); });
    step.upper.d = Vector::NullaryExpr(d2, [&] { return normal(rng); });
    return step;
  }
  const int d = f.features(), classes = std::max(1, f.classes());
  std::mt19937_64 teacher_rng(12345);  // the same teacher for every step
  const Matrix w = Matrix::NullaryExpr(d, classes, [&] { return normal(teacher_rng); }) /
                   std::sqrt(static_cast<double>(std::max(1, d)));
  const int upper_rows = std::max(1, rows / 2);
  for (Batch* b : {&step.upper, &step.inner}) {
    const int n = b == &step.upper ? upper_rows : std::max(1, rows - upper_rows);
    b->dense = RowMatrix::NullaryExpr(n, d, [&] { return normal(rng); });
    const Matrix scores = b->dense * w;
    if (f.name() == "ridge_hpo") {
      b->targets = scores.col(0) + 0.1 * Vector::NullaryExpr(n, [&] { return normal(rng); });
      continue;
    }
    b->labels.resize(n);
    for (int i = 0; i < n; ++i) {
      Eigen::Index best = 0;
      (scores.row(i).transpose() +
       0.5 * Vector::NullaryExpr(classes, [&] {
         return normal(rng);
       })).maxCoeff(&best);
      b->labels[i] = static_cast<int32_t>(best);
    }
  }
  return step;
}

struct Lane {
  std::string id;
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<Stream> rpc;
  bool active = true;
  bool broken = false;
  Clock::time_point sent;
  absl::Status error;
};

struct WorkerResult {
  std::vector<double> latencies;  // seconds
  std::vector<double> rounds;     // the replies' report.round_seconds
  std::vector<std::string> errors;
};

void Work(client::Client& c, const std::vector<v1::StepRequest>& pool, std::vector<std::string> ids,
          int steps, Clock::time_point stop_at, std::chrono::system_clock::time_point deadline,
          WorkerResult* out) {
  std::vector<Lane> lanes(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    lanes[i].id = ids[i];
    lanes[i].ctx = std::make_unique<grpc::ClientContext>();
    lanes[i].ctx->set_deadline(deadline);
    client::PrepareStreamContext(lanes[i].ctx.get());  // first Write: x-f2obo-session
    lanes[i].rpc = c.stub().Steps(lanes[i].ctx.get());
  }
  v1::StepReply reply;
  for (int t = 1; t <= steps && Clock::now() < stop_at && !g_interrupted; ++t) {
    bool any = false;
    for (Lane& l : lanes) {
      if (!l.active) continue;
      v1::StepRequest req = pool[(t - 1) % pool.size()];
      req.set_session_id(l.id);
      req.set_t(t);
      l.sent = Clock::now();
      if (!l.rpc->Write(req)) l.active = false, l.broken = true;
    }
    for (Lane& l : lanes) {
      if (!l.active) continue;
      if (!l.rpc->Read(&reply)) {
        l.active = false, l.broken = true;
        continue;
      }
      out->latencies.push_back(std::chrono::duration<double>(Clock::now() - l.sent).count());
      out->rounds.push_back(reply.report().round_seconds());
      any = true;
    }
    if (!any) break;
  }
  for (Lane& l : lanes) {
    if (!l.broken) l.rpc->WritesDone();
    const grpc::Status s = l.rpc->Finish();
    // Streams cut by the --max_seconds deadline are not errors.
    if (!s.ok() && s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      out->errors.push_back(absl::StrCat(l.id, ": ", s.error_message()));
    }
  }
}

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p * sorted.size()));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

int RunLoadgen() {
  const int n = absl::GetFlag(FLAGS_sessions);
  const int steps = absl::GetFlag(FLAGS_steps).value_or(200);
  const int rows = absl::GetFlag(FLAGS_rows_per_step);
  const double max_seconds = absl::GetFlag(FLAGS_max_seconds);
  int threads = absl::GetFlag(FLAGS_threads);
  if (n < 1 || n > 1000) return UsageError("--sessions: must lie in [1, 1000]");
  if (steps < 0) return UsageError("--steps: must be >= 0");
  if (rows < 2) return UsageError("--rows_per_step: must be >= 2");
  if (threads < 0 || threads > 1000) return UsageError("--threads: must lie in [0, 1000]");
  if (!(max_seconds > 0 && max_seconds <= 86400)) {
    return UsageError("--max_seconds: must lie in (0, 86400]");
  }
  threads = threads == 0 ? n : std::min(threads, n);
  absl::StatusOr<v1::CreateSessionRequest> create = CreateRequestFromFlags(784, 10);
  if (!create.ok()) return UsageError(std::string(create.status().message()));
  const std::string prefix = create->session_id();

  client::Client c(ClientOptionsFromFlags());
  std::vector<std::string> ids;
  v1::SessionInfo shape;
  const auto cleanup = [&] {
    int failed = 0;
    for (const std::string& id : ids) failed += c.DeleteSession(id).ok() ? 0 : 1;
    if (failed > 0) std::fprintf(stderr, "f2obo-cli: loadgen: %d sessions not deleted\n", failed);
  };
  for (int i = 0; i < n; ++i) {
    if (!prefix.empty()) create->set_session_id(absl::StrCat(prefix, "-", i));
    absl::StatusOr<v1::SessionInfo> info = c.CreateSession(*create);
    if (!info.ok()) {
      cleanup();
      return RpcError("loadgen: create", info.status());
    }
    ids.push_back(info->session_id());
    if (i == 0) shape = *info;
  }
  const v1::FamilySpec& f = shape.spec().family();
  std::printf(
      "loadgen: %d sessions x %d steps, %s / %s, %d rows/step, x_dim %d, y_dim %d, "
      "%d threads\n",
      n, steps, f.name().c_str(), shape.spec().algorithm().c_str(), rows, shape.x_dim(),
      v1::YDimOf(shape), threads);
  std::fflush(stdout);
  std::vector<v1::StepRequest> pool(kPool);
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed).value_or(1));
  for (int k = 0; k < kPool; ++k) {
    const StepData step = SyntheticStep(shape, rows, rng);
    ToProto(step.upper, pool[k].mutable_upper());
    ToProto(step.inner, pool[k].mutable_inner());
  }

  auto previous = std::signal(SIGINT, OnSigint);
  const auto start = Clock::now();
  const auto span =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(max_seconds));
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(span);
  std::vector<WorkerResult> results(threads);
  std::vector<std::thread> workers;
  for (int k = 0; k < threads; ++k) {
    std::vector<std::string> mine;
    for (int i = k; i < n; i += threads) mine.push_back(ids[i]);
    workers.emplace_back(Work, std::ref(c), std::cref(pool), std::move(mine), steps, start + span,
                         deadline, &results[k]);
  }
  for (std::thread& w : workers) w.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::signal(SIGINT, previous);
  cleanup();

  std::vector<double> lat, rounds;
  std::vector<std::string> errors;
  for (WorkerResult& r : results) {
    lat.insert(lat.end(), r.latencies.begin(), r.latencies.end());
    rounds.insert(rounds.end(), r.rounds.begin(), r.rounds.end());
    errors.insert(errors.end(), r.errors.begin(), r.errors.end());
  }
  std::sort(lat.begin(), lat.end());
  std::sort(rounds.begin(), rounds.end());
  const int64_t done = static_cast<int64_t>(lat.size());
  const double rate = done / std::max(seconds, 1e-9);
  // Upload volume: the serialized size of the batches each step carries
  // (the pool is used cyclically, so its mean is exact up to rounding).
  double request_bytes = 0;
  for (const v1::StepRequest& r : pool) request_bytes += static_cast<double>(r.ByteSizeLong());
  request_bytes /= kPool;
  const std::string volume =
      f.name() == "quadratic"
          ? absl::StrFormat(" (%.4g MB/s)", rate * request_bytes / 1e6)
          : absl::StrFormat(" (%.0f rows/s, %.4g MB/s)", rate * rows, rate * request_bytes / 1e6);
  std::printf(
      "completed %lld of %lld steps in %.2f s: %.1f steps/s%s%s\n", static_cast<long long>(done),
      static_cast<long long>(n) * steps, seconds, rate, volume.c_str(),
      g_interrupted                                              ? ", interrupted"
      : done < static_cast<int64_t>(n) * steps && errors.empty() ? ", stopped at --max_seconds"
                                                                 : "");
  std::printf(
      "step latency (client-observed): p50 %.3f ms  p95 %.3f ms  p99 %.3f ms  max %.2f ms\n",
      1e3 * Percentile(lat, 0.50), 1e3 * Percentile(lat, 0.95), 1e3 * Percentile(lat, 0.99),
      lat.empty() ? 0.0 : 1e3 * lat.back());
  // The server's own time in the round (RoundReport.round_seconds): the
  // "round alone" that a step's latency is compared with.
  std::printf("server round (report.round_seconds): p50 %.3f ms  p95 %.3f ms\n",
              1e3 * Percentile(rounds, 0.50), 1e3 * Percentile(rounds, 0.95));
  std::printf("errors: %zu\n", errors.size());
  for (const std::string& e : errors) std::fprintf(stderr, "f2obo-cli: loadgen: %s\n", e.c_str());
  return errors.empty() ? kExitOk : kExitRpc;
}

}  // namespace f2obo::cli
