// rebalance: move every routing key to the replica the proxy sends it to
// (client/rebalance.h explains the protocol and its crash safety).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"
#include "client/rebalance.h"

namespace f2obo::cli {

int RunRebalance() {
  client::RebalanceOptions o;
  o.proxy = absl::GetFlag(FLAGS_proxy);
  if (o.proxy.empty()) return UsageError("--proxy is required");
  for (absl::string_view item :
       absl::StrSplit(absl::GetFlag(FLAGS_replicas), ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> r = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (r.first.empty() || r.second.empty()) {
      return UsageError("--replicas: expected name=host:port,... (got '" + std::string(item) +
                        "')");
    }
    o.replicas.push_back(std::move(r));
  }
  if (o.replicas.empty()) return UsageError("--replicas is required");
  o.stop_after = absl::GetFlag(FLAGS_stop_after);
  if (!o.stop_after.empty() && o.stop_after != "fence" && o.stop_after != "import") {
    return UsageError("--stop_after: 'fence' or 'import'");
  }
  o.lift_tombstones = absl::GetFlag(FLAGS_lift_tombstones);
  o.base = ClientOptionsFromFlags();
  absl::StatusOr<client::RebalanceReport> report = client::Rebalance(o);
  if (!report.ok()) return RpcError("rebalance", report.status());
  for (const std::string& line : report->log) std::printf("%s\n", line.c_str());
  std::printf("moved %d, undone %d, tombstones lifted %d\n", report->moved, report->undone,
              report->lifted);
  return kExitOk;
}

}  // namespace f2obo::cli
