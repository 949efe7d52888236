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
#include "absl/strings/string_view.h"
#include "client/client.h"
#include "f2obo/v1/class_fields.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/f2obo.pb.h"

// Every flag but the algorithm options (client/cli/flags.def).
#define F2OBO_CLI_FLAG(type, name, def, commands, help) ABSL_DECLARE_FLAG(type, name);
#define F2OBO_CLI_OPTION_FLAGS(commands)
#include "client/cli/flags.def"
#undef F2OBO_CLI_FLAG
#undef F2OBO_CLI_OPTION_FLAGS

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

// Flag names (without dashes), for per-subcommand help and for rejecting
// flags that do not apply to a subcommand (flags.cc, from flags.def): the
// global flags, and the other flags `command` takes, in flags.def's order.
const std::vector<std::string>& GlobalFlagNames();
std::vector<std::string> CommandFlagNames(absl::string_view command);

// Session spec from the spec flags.  `features` / `classes` fill in
// --features / --classes when those are not given (e.g. from a dataset).
// Bad values and specs the core rejects (validated locally, so the message
// names the field, e.g. "family.name: unknown family 'x'") come back as
// INVALID_ARGUMENT: a usage error.  An option flag the session's algorithm
// does not read is one (`unread`, convert.h); create-group passes kDrop
// for its shared spec and checks each member (GroupMemberSpecs).
absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromFlags(
    std::optional<int> features, std::optional<int> classes,
    UnreadOptions unread = UnreadOptions::kRefuse);
// The same, with --features and --classes inferred from --dataset when it
// is given (create, create-group); an unreadable dataset is
// INVALID_ARGUMENT "--dataset: <why>".
absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromSpecFlags(
    UnreadOptions unread = UnreadOptions::kRefuse);
// The algorithm option flags given (one per AlgorithmOptions field), into
// `o`; and their names (spec_flags.cc).
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
int RunExport();
int RunImport();

// The values of every --member flag given, in order (main.cc collects them:
// unlike other flags, --member may be repeated).
std::vector<std::string>& MemberFlagValues();

}  // namespace f2obo::cli

#endif  // F2OBO_CLIENT_CLI_CLI_H_
