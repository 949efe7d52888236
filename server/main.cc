// f2obo-server: the online bilevel optimization service.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/cpu_features.h"
#include "server/auth.h"
#include "server/machine_memory.h"
#include "server/process_memory.h"
#include "server/server.h"

// The flags, declared once in server_flags.def (name, default, rule, help).
#define F2OBO_SERVER_FLAG(type, name, def, rule, help) ABSL_FLAG(type, name, def, help);
#define F2OBO_LIMIT_FLAG F2OBO_SERVER_FLAG
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG

// --help and --helpshort list the server's own flags, those Abseil files
// under server_flags.def (where the ABSL_FLAG lines expand).  Abseil's
// default keeps those of <program>.cc or <program>-main.cc only, so --help
// printed "No flags matched".  (--helpfull still lists every flag, Abseil's
// own included.)
namespace {
bool DefinedHere(absl::string_view file) { return absl::EndsWith(file, "server/server_flags.def"); }
}  // namespace

int main(int argc, char** argv) {
  // Before anything runs code compiled for F2OBO_ARCH's extensions.
  if (absl::Status cpu = f2obo::CheckCpuFeatures(); !cpu.ok()) {
    std::fprintf(stderr, "f2obo-server: %s\n", std::string(cpu.message()).c_str());
    return 1;
  }
  f2obo::server::TuneAllocator();  // before any thread allocates
#ifdef NDEBUG
  // A release build does not pay for the debug checks of an Abseil built
  // without NDEBUG (Debian's): on every Mutex Lock/Unlock a global
  // lock-order graph's lookup and update (GraphCycles), which a tiny step's
  // dozen locks paid several microseconds for.  Debug builds keep them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
#endif
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
#define F2OBO_SERVER_FLAG(type, name, def, rule, help) o.name = absl::GetFlag(FLAGS_##name);
#define F2OBO_LIMIT_FLAG(type, name, def, rule, help) o.limits.name = absl::GetFlag(FLAGS_##name);
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG
  if (o.replica_name.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) o.replica_name = host;
  }
  const f2obo::server::MemoryLimits memory = f2obo::server::DeriveMemoryLimits(
      o.max_total_state_bytes, o.max_y_dim, f2obo::server::AvailableMemory());
  o.limits.max_y_dim = memory.max_y_dim;
  o.limits.max_total_state_bytes = memory.max_total_state_bytes;

  absl::StatusOr<std::unique_ptr<f2obo::server::Server>> server = f2obo::server::Server::Start(o);
  if (!server.ok()) {
    std::fprintf(stderr, "f2obo-server: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  for (const std::string& problem : (*server)->recovery_problems()) {
    std::fprintf(stderr, "f2obo-server: NOT LOADED: %s\n", problem.c_str());
  }
  std::fprintf(stderr, "f2obo-server: memory limits: %s\n", memory.explanation.c_str());
  if (!o.store.empty()) {
    // Not the URI: it may hold a password.
    // Shared: its sessions are loaded when first asked for, not at start.
    const int resident = o.limits.max_resident_sessions > 0
                             ? std::min(o.limits.max_resident_sessions, o.limits.max_sessions)
                             : o.limits.max_sessions;
    std::fprintf(stderr,
                 "f2obo-server: PostgreSQL store (--store; durability %s), shared: its sessions "
                 "are loaded when first asked for, at most %d held in memory\n",
                 o.durability.c_str(), resident);
  } else if (!o.data_dir.empty()) {
    std::fprintf(stderr, "f2obo-server: %zu session(s) restored from %s (durability %s)\n",
                 (*server)->session_count(), o.data_dir.c_str(), o.durability.c_str());
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
  (*server)->Shutdown(o.shutdown_grace_seconds);
  std::fprintf(stderr, "f2obo-server: stopped\n");
  return 0;
}
