// f2obo-cli internals: the subcommand table, flags shared between
// subcommands, error reporting and helpers.
//
// Exit codes: 0 success, 1 an RPC (or server-side) failure, 2 a usage error
// (unknown flag, bad flag value, missing argument, unreadable dataset).
// Every error prints one line "f2obo-cli: <message>" to stderr.
#ifndef F2OBO_CLIENT_CLI_CLI_H_
#define F2OBO_CLIENT_CLI_CLI_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "f2obo/v1/f2obo.pb.h"

// Global flags (common.cc).
ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(double, timeout);
ABSL_DECLARE_FLAG(int, max_attempts);
ABSL_DECLARE_FLAG(double, moved_retry_seconds);
ABSL_DECLARE_FLAG(bool, verbose);
// Shared by several subcommands (common.cc).
ABSL_DECLARE_FLAG(std::string, session);
ABSL_DECLARE_FLAG(std::optional<int>, steps);
ABSL_DECLARE_FLAG(std::optional<int64_t>, until);
ABSL_DECLARE_FLAG(int, rows_per_step);
// Session spec flags (spec_flags.cc).
ABSL_DECLARE_FLAG(std::string, id);
ABSL_DECLARE_FLAG(std::string, family);
ABSL_DECLARE_FLAG(std::optional<int>, features);
ABSL_DECLARE_FLAG(std::optional<int>, classes);
ABSL_DECLARE_FLAG(std::optional<int>, tasks);
ABSL_DECLARE_FLAG(std::string, algorithm);
ABSL_DECLARE_FLAG(std::optional<uint64_t>, seed);
// Groups (group_cmd.cc).
ABSL_DECLARE_FLAG(std::string, group);

namespace f2obo::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRpc = 1;
inline constexpr int kExitUsage = 2;

// Print "f2obo-cli: <message>" to stderr and return the exit code.
int UsageError(const std::string& message);
int RpcError(const std::string& what, const absl::Status& status);

// A client for --server with --timeout and --max_attempts.
client::ClientOptions ClientOptionsFromFlags();

// "%.6g"-style number formatting used in tables and progress lines.
std::string Num(double v, int precision = 6);
// The shortest text that reads back as exactly `v` (0.1, not the 17 digits
// 0.10000000000000001): values a user may feed back or compare.
std::string Exact(double v);

// Prints rows as left-aligned columns separated by two spaces.
void PrintTable(const std::vector<std::vector<std::string>>& rows);

// Flag groups, by name (without dashes), for per-subcommand help and for
// rejecting flags that do not apply to a subcommand.
const std::vector<std::string>& GlobalFlagNames();
const std::vector<std::string>& SpecFlagNames();

// Session spec from the spec flags.  `features` / `classes` fill in
// --features / --classes when those are not given (e.g. from a dataset).
// Bad values and specs the core rejects (validated locally, so the message
// names the field, e.g. "family.name: unknown family 'x'") come back as
// INVALID_ARGUMENT: a usage error.
absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromFlags(std::optional<int> features,
                                                                std::optional<int> classes);
// The algorithm option flags given (one per AlgorithmOptions field), into
// `o`; and their names.
absl::Status OptionsFromFlags(v1::AlgorithmOptions* o);
std::vector<std::string> OptionFlagNames();

// Subcommands; each returns the process exit code.
int RunCreate();
int RunSessions();
int RunDecision();
int RunDelete();
int RunHealth();
int RunStream();
int RunMetrics();
int RunLoadgen();
int RunCreateGroup();
int RunGroup();
int RunEvaluate();
int RunAlgorithms();
int RunCheckpoint();
int RunRollback();
int RunFork();
int RunRebalance();

// The values of every --member flag given, in order (main.cc collects them:
// unlike other flags, --member may be repeated).
std::vector<std::string>& MemberFlagValues();

}  // namespace f2obo::cli

#endif  // F2OBO_CLIENT_CLI_CLI_H_
