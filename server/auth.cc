#include "server/auth.h"

#include <sys/stat.h>

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "f2obo/v1/rpc_policy.h"

namespace f2obo::server {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  // Walk the longer length; fold the length difference into the result.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<Access> RequiredAccess(absl::string_view method) {
  const v1::RpcPolicy* policy = v1::FindRpcPolicy(method);
  if (policy == nullptr) {
    return absl::InternalError(
        absl::StrCat("rpc ", method, " declares no role (proto/f2obo/v1/rpc_policy.proto)"));
  }
  return policy->role() == v1::RpcPolicy::READ ? Access::kRead : Access::kWrite;
}

std::string TokenFilePermissionWarning(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return "";
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) == 0) return "";
  const bool readable = (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
  const bool writable = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  const char* who = readable && writable ? "readable and writable"
                    : readable           ? "readable"
                    : writable           ? "writable"
                                         : "accessible";
  return absl::StrFormat(
      "--token_file %s has mode %04o: %s by its group or others, who can take its tokens' "
      "access to every session (chmod 600 %s)",
      path, st.st_mode & 07777, who, path);
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>> TokenAuthenticator::FromFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--token_file: cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return FromText(text.str(), path);
}

absl::StatusOr<std::unique_ptr<TokenAuthenticator>> TokenAuthenticator::FromText(
    const std::string& text, const std::string& source) {
  auto auth = std::make_unique<TokenAuthenticator>();
  // A token listed twice is most likely an editing mistake, and with two
  // roles its effective role would depend on the order of the checks.
  std::map<std::string, int> first_line;  // token -> line it was first given on
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const std::vector<absl::string_view> parts =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() != 2 || (parts[0] != "read" && parts[0] != "write") || parts[1].size() < 16) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ":", line_no, ": want '<read|write> <token of at least 16 characters>'"));
    }
    const auto [seen, is_new] = first_line.emplace(std::string(parts[1]), line_no);
    if (!is_new) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_no, ": duplicate token (already given on line ",
                       seen->second, "); each token must appear once, with one role"));
    }
    auth->tokens_.push_back(
        Token{parts[0] == "write" ? Access::kWrite : Access::kRead, std::string(parts[1])});
  }
  if (auth->tokens_.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": no tokens"));
  }
  return auth;
}

absl::Status TokenAuthenticator::Check(const grpc::ServerContext& context, Access needed) const {
  const auto& md = context.client_metadata();
  const auto it = md.find("authorization");
  if (it == md.end()) {
    return absl::UnauthenticatedError("missing 'authorization: Bearer <token>' metadata");
  }
  const std::string value(it->second.data(), it->second.size());
  const std::string kPrefix = "Bearer ";
  if (value.size() <= kPrefix.size() || value.compare(0, kPrefix.size(), kPrefix) != 0) {
    return absl::UnauthenticatedError("authorization metadata must be 'Bearer <token>'");
  }
  return CheckToken(value.substr(kPrefix.size()), needed);
}

absl::Status TokenAuthenticator::CheckToken(const std::string& presented, Access needed) const {
  bool found = false, allowed = false;
  for (const Token& t : tokens_) {  // every token is compared, match or not
    const bool eq = ConstantTimeEquals(presented, t.secret);
    found |= eq;
    allowed |= eq && (t.role == Access::kWrite || needed == Access::kRead);
  }
  if (!found) return absl::UnauthenticatedError("unknown token");
  if (!allowed) return absl::PermissionDeniedError("this token may only read");
  return absl::OkStatus();
}

}  // namespace f2obo::server
