// f2obo-server: the online bilevel optimization service.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "core/cpu_features.h"
#include "server/auth.h"
#include "server/machine_memory.h"
#include "server/process_memory.h"
#include "server/request_bounds.h"
#include "server/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "gRPC listen address host:port (port 0 picks a free port)");
ABSL_FLAG(std::string, replica_name, "",
          "This replica's name behind a proxy, reported by GetServerInfo and used by "
          "`f2obo-cli rebalance` (\"\" = the host name)");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Prometheus /metrics HTTP address host:port; binds only there (\"\" = off)");
ABSL_FLAG(int, metrics_threads, 1,
          "Worker threads computing exact (second-order) metrics off the request path");
ABSL_FLAG(int, max_pending_metrics, 64,
          "Per-session queue of metric jobs: as it fills, exact metrics are computed for a "
          "random sample of the due steps (see --min_exact_probability), beyond twice it a step "
          "processes its session's oldest jobs itself");
ABSL_FLAG(double, min_exact_probability, 0.05,
          "Under load, the least probability with which a due step's exact metrics are "
          "computed: the steps evaluated are a random sample (probability 1 while the worker "
          "keeps up, falling towards this one as its queue nears --max_pending_metrics), and "
          "RunningMetrics.estimate sums r_t / p_t over them (Horvitz-Thompson), so skipped "
          "steps cannot make BLReg look flat; in (0, 1]");
ABSL_FLAG(double, exact_sample_probability, 1.0,
          "The most probability with which a due step's exact metrics are computed, load or "
          "not: below 1, a random sample of the due steps even on an idle server (cheaper "
          "metrics, an estimate with a standard error); in (0, 1]");
ABSL_FLAG(int, http_threads, 2, "Threads serving the metrics HTTP port");
ABSL_FLAG(bool, dashboard, true,
          "Serve the live dashboard (/) and its JSON API (/api/...) on the metrics port.  Like "
          "/metrics it has no authentication, and it also shows decisions x_t: turn it off "
          "where the metrics port is reachable by anyone who must not see them");
ABSL_FLAG(bool, per_session_labels, true,
          "Export per-session series with a session_id label (turn off for very many sessions)");
ABSL_FLAG(int, max_sessions, 1000, "Maximum number of sessions (RESOURCE_EXHAUSTED beyond)");
ABSL_FLAG(int, max_batch_rows, 100000, "Maximum rows in one batch");
ABSL_FLAG(int, max_batch_cols, 1000000, "Maximum feature columns in one batch");
ABSL_FLAG(int64_t, max_batch_nnz, 50000000, "Maximum stored values in one batch");
ABSL_FLAG(int, max_tasks, 10000,
          "Maximum tasks m of a multi-task session (its lower-level problems; a step carries "
          "batches for some of them)");
ABSL_FLAG(int64_t, max_y_dim, 0,
          "Maximum inner variables (y) of one session; 0 (default): derived from the memory, "
          "the largest y whose session fits --max_total_state_bytes (said at start)");
ABSL_FLAG(int64_t, max_total_state_bytes, 0,
          "Memory all sessions together may take, estimated at creation before anything is "
          "allocated (x, y, z and the copies a round and a commit make); a session beyond it "
          "is refused with RESOURCE_EXHAUSTED.  0 (default): half of the physical memory, or "
          "of the cgroup's memory limit when lower (said at start)");
ABSL_FLAG(int, max_message_bytes, 64 << 20, "Maximum gRPC message size in bytes");
ABSL_FLAG(int, reply_cache, 16, "Replies kept per session to answer retried steps");
ABSL_FLAG(int, max_inner_iterations, 100000,
          "Maximum inner iterations per loop of one round that a session may ask for");
ABSL_FLAG(double, round_budget_seconds, 30.0,
          "Wall time one round may run; a round still running then is stopped and its step "
          "refused with RESOURCE_EXHAUSTED, nothing applied (0: no budget).  Rounds also stop "
          "when their client cancels or its deadline passes");
ABSL_FLAG(int, checkpoint_every, 100,
          "Keep a checkpoint of each session after every N-th step (0: only where a session "
          "starts and on demand), for RollbackSession and ForkSession; written with the step, "
          "in the store");
ABSL_FLAG(int, max_checkpoints, 10,
          "Checkpoints kept per session, the newest (0: none, not even on demand).  Each is a "
          "copy of the session's state: in the store, or in memory without --data_dir");
ABSL_FLAG(std::string, data_dir, "f2obo-data",
          "Directory of the session store (SQLite); \"\" keeps sessions in memory only");
ABSL_FLAG(int64_t, max_store_bytes, 0,
          "Cap on the session store's database file in bytes (0: none, the disk is the "
          "limit).  Writes beyond it are refused with RESOURCE_EXHAUSTED, as on a full disk; "
          "deleting sessions makes room");
ABSL_FLAG(std::string, durability, "sync",
          "sync: a step is acknowledged only once durable (group commit across sessions); "
          "none: no fsync, no waiting (benchmarks; a crash may lose recent steps)");
ABSL_FLAG(std::string, token_file, "",
          "Bearer tokens, one '<read|write> <token>' per line; without it the server is open.  "
          "A file its group or others may read or write is warned about at start (chmod 600)");
ABSL_FLAG(std::string, tls_cert_file, "", "PEM server certificate chain; enables TLS");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA bundle; when set, clients must present a certificate it signed (mTLS)");
ABSL_FLAG(double, shutdown_grace_seconds, 10.0,
          "On SIGTERM/SIGINT, time the server takes to stop: rounds in flight may run until "
          "shortly before it ends, then they are stopped (their steps not applied)");

// --help and --helpshort list the flags of this file.  Abseil's default
// keeps those of <program>.cc or <program>-main.cc only, and the binary
// f2obo-server is built from main.cc, so --help printed "No flags matched".
// (--helpfull still lists every flag, Abseil's own included.)
namespace {
bool DefinedHere(absl::string_view file) { return absl::EndsWith(file, "server/main.cc"); }
}  // namespace

int main(int argc, char** argv) {
  // Before anything runs code compiled for F2OBO_ARCH's extensions.
  if (absl::Status cpu = f2obo::CheckCpuFeatures(); !cpu.ok()) {
    std::fprintf(stderr, "f2obo-server: %s\n", std::string(cpu.message()).c_str());
    return 1;
  }
  f2obo::server::TuneAllocator();  // before any thread allocates
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = &DefinedHere;
  usage.contains_helpshort_flags = &DefinedHere;
  absl::SetFlagsUsageConfig(usage);
  absl::SetProgramUsageMessage(
      "Serves online bilevel optimization sessions over gRPC (f2obo.v1.F2obo) and "
      "exports Prometheus metrics.");
  absl::ParseCommandLine(argc, argv);

  // Block the stop signals in every thread; main waits for them below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  f2obo::server::ServerOptions o;
  o.listen = absl::GetFlag(FLAGS_listen);
  o.replica_name = absl::GetFlag(FLAGS_replica_name);
  if (o.replica_name.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) o.replica_name = host;
  }
  // Fence targets name replicas and are held to the request bound
  // (request_bounds.h): a longer name could not be fenced towards.
  if (o.replica_name.size() > f2obo::server::kMaxStringBytes) {
    std::fprintf(stderr, "f2obo-server: --replica_name: %zu bytes, beyond the bound of %zu\n",
                 o.replica_name.size(), f2obo::server::kMaxStringBytes);
    return 1;
  }
  o.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  o.metrics_threads = absl::GetFlag(FLAGS_metrics_threads);
  o.max_pending_metrics = absl::GetFlag(FLAGS_max_pending_metrics);
  o.min_exact_probability = absl::GetFlag(FLAGS_min_exact_probability);
  o.exact_sample_probability = absl::GetFlag(FLAGS_exact_sample_probability);
  o.http_threads = absl::GetFlag(FLAGS_http_threads);
  o.dashboard = absl::GetFlag(FLAGS_dashboard);
  o.per_session_labels = absl::GetFlag(FLAGS_per_session_labels);
  o.max_message_bytes = absl::GetFlag(FLAGS_max_message_bytes);
  o.limits.max_sessions = absl::GetFlag(FLAGS_max_sessions);
  o.limits.max_batch_rows = absl::GetFlag(FLAGS_max_batch_rows);
  o.limits.max_batch_cols = absl::GetFlag(FLAGS_max_batch_cols);
  o.limits.max_batch_nnz = absl::GetFlag(FLAGS_max_batch_nnz);
  o.limits.max_tasks = absl::GetFlag(FLAGS_max_tasks);
  const f2obo::server::MemoryLimits memory = f2obo::server::DeriveMemoryLimits(
      absl::GetFlag(FLAGS_max_total_state_bytes), absl::GetFlag(FLAGS_max_y_dim),
      f2obo::server::AvailableMemory());
  o.limits.max_y_dim = memory.max_y_dim;
  o.limits.max_total_state_bytes = memory.max_total_state_bytes;
  o.limits.reply_cache = absl::GetFlag(FLAGS_reply_cache);
  o.limits.max_inner_iterations = absl::GetFlag(FLAGS_max_inner_iterations);
  o.limits.round_budget_seconds = absl::GetFlag(FLAGS_round_budget_seconds);
  o.limits.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  o.limits.max_checkpoints = absl::GetFlag(FLAGS_max_checkpoints);
  o.data_dir = absl::GetFlag(FLAGS_data_dir);
  o.max_store_bytes = absl::GetFlag(FLAGS_max_store_bytes);
  const std::string durability = absl::GetFlag(FLAGS_durability);
  if (durability != "sync" && durability != "none") {
    std::fprintf(stderr, "f2obo-server: --durability: '%s' is not 'sync' or 'none'\n",
                 durability.c_str());
    return 1;
  }
  o.durability =
      durability == "sync" ? f2obo::server::Durability::kSync : f2obo::server::Durability::kNone;
  o.token_file = absl::GetFlag(FLAGS_token_file);
  o.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  o.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  o.tls_client_ca_file = absl::GetFlag(FLAGS_tls_client_ca_file);

  absl::StatusOr<std::unique_ptr<f2obo::server::Server>> server = f2obo::server::Server::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "f2obo-server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  for (const std::string& problem : (*server)->recovery_problems()) {
    std::fprintf(stderr, "f2obo-server: NOT LOADED: %s\n", problem.c_str());
  }
  std::fprintf(stderr, "f2obo-server: memory limits: %s\n", memory.explanation.c_str());
  if (!o.data_dir.empty()) {
    std::fprintf(stderr, "f2obo-server: %zu session(s) restored from %s (durability %s)\n",
                 (*server)->session_count(), o.data_dir.c_str(), durability.c_str());
  }
  if (const std::string warning = f2obo::server::TokenFilePermissionWarning(o.token_file);
      !o.token_file.empty() && !warning.empty()) {
    std::fprintf(stderr, "f2obo-server: WARNING: %s\n", warning.c_str());
  }
  if (o.token_file.empty()) {
    std::fprintf(stderr,
                 "f2obo-server: WARNING: no --token_file: ANY client that reaches %s may "
                 "create, step and delete sessions\n",
                 o.listen.c_str());
  }
  const std::string host = o.listen.substr(0, o.listen.rfind(':'));
  // One machine-readable line: tests and scripts read the bound ports here
  // (the dashboard's URL after them, for the person reading it).
  std::string metrics = "(disabled)";
  if (!o.metrics_listen.empty()) {
    const std::string at = o.metrics_listen.substr(0, o.metrics_listen.rfind(':')) + ":" +
                           std::to_string((*server)->metrics_port());
    metrics = at + "/metrics, dashboard on http://" + at + "/";
  }
  std::printf("f2obo-server listening on %s:%d, metrics on %s\n", host.c_str(),
              (*server)->grpc_port(), metrics.c_str());
  std::fflush(stdout);

  int signal = 0;
  sigwait(&stop, &signal);
  std::fprintf(stderr, "f2obo-server: %s received, shutting down\n",
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
  (*server)->Shutdown(absl::GetFlag(FLAGS_shutdown_grace_seconds));
  std::fprintf(stderr, "f2obo-server: stopped\n");
  return 0;
}
