// The server's flags, declared once in server/server_flags.def: each value
// a flag's rule refuses stops the server at start with "--<flag>: <rule>",
// before anything is bound or opened; the defaults pass.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "server/server.h"

namespace f2obo::server {
namespace {

TEST(ServerFlags, TheDefaultsPass) { EXPECT_TRUE(CheckServerFlags(ServerOptions{}).ok()); }

TEST(ServerFlags, EachRuleRefusesABadValueNamingTheFlag) {
  struct Case {
    std::function<void(ServerOptions&)> set;
    std::string message;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {[](ServerOptions& o) { o.listen = ""; }, "--listen: must be set"},
      {[](ServerOptions& o) { o.replica_name = std::string(300, 'r'); },
       "--replica_name: 300 bytes, beyond the bound of 256"},
      {[](ServerOptions& o) { o.metrics_threads = 0; }, "--metrics_threads: must be >= 1"},
      {[](ServerOptions& o) { o.min_exact_probability = 0; },
       "--min_exact_probability: must be in (0, 1]"},
      {[](ServerOptions& o) { o.min_exact_probability = std::nan(""); },
       "--min_exact_probability: must be in (0, 1]"},
      {[](ServerOptions& o) { o.exact_sample_probability = 1.5; },
       "--exact_sample_probability: must be in (0, 1]"},
      {[](ServerOptions& o) { o.limits.max_sessions = 0; }, "--max_sessions: must be >= 1"},
      {[](ServerOptions& o) { o.limits.max_batch_rows = -1; }, "--max_batch_rows: must be >= 1"},
      {[](ServerOptions& o) { o.limits.reply_cache = 0; }, "--reply_cache: must be >= 1"},
      {[](ServerOptions& o) { o.limits.max_tasks = 0; }, "--max_tasks: must be >= 1"},
      {[](ServerOptions& o) { o.limits.checkpoint_every = -1; },
       "--checkpoint_every: must be >= 0"},
      {[](ServerOptions& o) { o.limits.max_checkpoints = -1; }, "--max_checkpoints: must be >= 0"},
      {[inf](ServerOptions& o) { o.limits.round_budget_seconds = inf; },
       "--round_budget_seconds: must be finite and >= 0"},
      {[](ServerOptions& o) { o.limits.round_budget_seconds = std::nan(""); },
       "--round_budget_seconds: must be finite and >= 0"},
      {[](ServerOptions& o) { o.durability = "fast"; },
       "--durability: 'fast' is not 'sync' or 'none'"},
      {[](ServerOptions& o) { o.shutdown_grace_seconds = -1; },
       "--shutdown_grace_seconds: must be finite and >= 0"},
      {[](ServerOptions& o) { o.max_pending_metrics = 0; }, "--max_pending_metrics: must be >= 1"},
      {[](ServerOptions& o) { o.metrics_buffer_bytes = 1000; },
       "--metrics_buffer_bytes: must be >= 4096"},
      {[](ServerOptions& o) { o.max_message_bytes = 1000; },
       "--max_message_bytes: must be >= 65536"},
      {[](ServerOptions& o) { o.limits.max_batch_cols = 0; }, "--max_batch_cols: must be >= 1"},
      {[](ServerOptions& o) { o.limits.max_batch_nnz = -5; }, "--max_batch_nnz: must be >= 1"},
      {[](ServerOptions& o) { o.limits.max_inner_iterations = 0; },
       "--max_inner_iterations: must be >= 1"},
      {[](ServerOptions& o) { o.max_y_dim = -1; }, "--max_y_dim: must be >= 0"},
      {[](ServerOptions& o) { o.max_total_state_bytes = -1; },
       "--max_total_state_bytes: must be >= 0"},
      {[](ServerOptions& o) { o.max_store_bytes = -1; }, "--max_store_bytes: must be >= 0"},
  };
  for (const Case& c : cases) {
    ServerOptions o;
    c.set(o);
    const absl::Status checked = CheckServerFlags(o);
    EXPECT_EQ(checked.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_EQ(checked.message(), c.message);
    // Start refuses it the same way, before binding or opening anything.
    o.listen = o.listen.empty() ? "" : "127.0.0.1:0";
    o.metrics_listen = "";
    o.data_dir = "";
    const absl::StatusOr<std::unique_ptr<Server>> started = Server::Start(o);
    ASSERT_FALSE(started.ok()) << c.message;
    EXPECT_EQ(started.status().message(), c.message);
  }
}

// A rule between two flags: Server::Start's own.
TEST(ServerFlags, TheLeastExactProbabilityMustNotExceedTheMost) {
  ServerOptions o;
  o.exact_sample_probability = 0.01;  // below the default floor 0.05
  EXPECT_TRUE(CheckServerFlags(o).ok());
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "";
  o.data_dir = "";
  const absl::StatusOr<std::unique_ptr<Server>> started = Server::Start(o);
  ASSERT_FALSE(started.ok());
  EXPECT_EQ(started.status().message(),
            "--min_exact_probability: must not exceed --exact_sample_probability");
}

}  // namespace
}  // namespace f2obo::server
