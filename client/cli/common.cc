// Global and shared flags of f2obo-cli, error reporting and output helpers.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"

ABSL_FLAG(std::string, server, "127.0.0.1:50051",
          "Address host:port of the f2obo server (every subcommand)");
ABSL_FLAG(double, timeout, 30.0, "Deadline in seconds of each unary RPC (streams have none)");
ABSL_FLAG(int, max_attempts, 6,
          "Attempts per unary Step (--mode=unary) and consecutive reconnects of a "
          "broken Steps stream, with exponential backoff");
ABSL_FLAG(std::string, token_file, "",
          "File holding the bearer token to send (a server started with --token_file): the "
          "token alone, or '<role> <token>' lines as in the server's file (the first 'write' "
          "token is used, else the first)");
ABSL_FLAG(double, moved_retry_seconds, 300,
          "How long a step (unary or stream) keeps retrying the \"moved\" status (a session "
          "being rebalanced to another replica, until the proxy routes it there), on top of "
          "--max_attempts; 0: counted like any UNAVAILABLE");
ABSL_FLAG(bool, verbose, false,
          "More output: the filled-in session spec after create, the dataset and step range "
          "of stream");
ABSL_FLAG(std::string, session, "", "Session id to act on");
ABSL_FLAG(std::optional<int>, steps, std::nullopt,
          "Number of steps to send, starting at the session's next_t (default: 400 for "
          "stream, 200 for loadgen)");
ABSL_FLAG(std::optional<int64_t>, until, std::nullopt,
          "stream: last step index to send (overrides --steps; re-running the same "
          "command resumes an interrupted stream).  metrics: stop after this step");
ABSL_FLAG(int, rows_per_step, 512,
          "Rows per step, split into the upper (validation) and inner (training) batches");

namespace f2obo::cli {

int UsageError(const std::string& message) {
  std::fprintf(stderr, "f2obo-cli: %s\n", message.c_str());
  return kExitUsage;
}

int RpcError(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "f2obo-cli: %s: %s: %s\n", what.c_str(),
               absl::StatusCodeToString(status.code()).c_str(),
               std::string(status.message()).c_str());
  return kExitRpc;
}

namespace {

absl::StatusOr<std::string> TokenFromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("--token_file: cannot read '" + path + "'");
  std::string line, first, write;
  while (std::getline(in, line)) {
    std::vector<std::string> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty() || words[0][0] == '#') continue;
    const std::string token = words.size() == 1 ? words[0] : words[1];
    if (first.empty()) first = token;
    if (words.size() > 1 && words[0] == "write" && write.empty()) write = token;
  }
  if (first.empty()) return absl::InvalidArgumentError("--token_file: '" + path + "' is empty");
  return write.empty() ? first : write;
}

}  // namespace

client::ClientOptions ClientOptionsFromFlags() {
  client::ClientOptions o;
  if (const std::string path = absl::GetFlag(FLAGS_token_file); !path.empty()) {
    absl::StatusOr<std::string> token = TokenFromFile(path);
    if (!token.ok()) {
      std::fprintf(stderr, "f2obo-cli: %s\n", std::string(token.status().message()).c_str());
      std::exit(kExitUsage);
    }
    o.token = *std::move(token);
  }
  o.target = absl::GetFlag(FLAGS_server);
  o.rpc_timeout_seconds = std::max(0.001, absl::GetFlag(FLAGS_timeout));
  o.max_attempts = std::max(1, absl::GetFlag(FLAGS_max_attempts));
  o.moved_retry_seconds = std::max(0.0, absl::GetFlag(FLAGS_moved_retry_seconds));
  return o;
}

std::string Num(double v, int precision) { return absl::StrFormat("%.*g", precision, v); }

std::string Exact(double v) {
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

const std::vector<std::string>& GlobalFlagNames() {
  static const auto* names = new std::vector<std::string>{
      "server", "timeout", "max_attempts", "token_file", "moved_retry_seconds", "verbose"};
  return *names;
}

}  // namespace f2obo::cli
