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

}  // namespace f2obo::cli
