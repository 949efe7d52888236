// Checkpoints, rollback and fork: checkpoint, rollback, fork.
#include <cstdio>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/cli/cli.h"

namespace f2obo::cli {
namespace {

// "<id>: next_t <n>, checkpoints at t = a, b, c"
void PrintSession(const v1::SessionInfo& info) {
  std::printf(
      "%s: next_t %lld, algorithm %s, checkpoints at t = %s\n", info.session_id().c_str(),
      static_cast<long long>(info.next_t()), info.spec().algorithm().c_str(),
      info.checkpoints().empty() ? "(none)" : absl::StrJoin(info.checkpoints(), ", ").c_str());
}

}  // namespace

int RunCheckpoint() {
  const std::string id = absl::GetFlag(FLAGS_session);
  if (id.empty()) return UsageError("--session is required");
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::SessionInfo> info = c.CheckpointSession(id);
  if (!info.ok()) return RpcError("checkpoint", info.status());
  PrintSession(*info);
  return kExitOk;
}

int RunRollback() {
  const std::string id = absl::GetFlag(FLAGS_session);
  if (id.empty()) return UsageError("--session is required");
  const std::optional<int64_t> to_t = absl::GetFlag(FLAGS_to_t);
  if (!to_t.has_value()) return UsageError("--to_t is required");
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::SessionInfo> info = c.RollbackSession(id, *to_t);
  if (!info.ok()) return RpcError("rollback", info.status());
  PrintSession(*info);
  return kExitOk;
}

int RunFork() {
  v1::ForkSessionRequest req;
  req.set_session_id(absl::GetFlag(FLAGS_session));
  if (req.session_id().empty()) return UsageError("--session (the source) is required");
  req.set_new_session_id(absl::GetFlag(FLAGS_id));
  if (const std::optional<int64_t> at = absl::GetFlag(FLAGS_at_t)) req.set_at_t(*at);
  req.set_algorithm(absl::GetFlag(FLAGS_algorithm));
  if (absl::Status s = OptionsFromFlags(req.mutable_options()); !s.ok()) {
    return UsageError(std::string(s.message()));
  }
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::SessionInfo> info = c.ForkSession(req);
  if (!info.ok()) return RpcError("fork", info.status());
  PrintSession(*info);
  return kExitOk;
}

}  // namespace f2obo::cli
