// Bearer-token authorization.  Tokens come from a file, one per line:
//     <role> <token>        role: "read" or "write"; '#' starts a comment
// A read token may call the RPCs whose option (f2obo.v1.policy) declares
// role READ (proto/f2obo/v1/f2obo.proto: GetDecision, GetGroup,
// GetServerInfo, GetSession, ListSessions, WatchMetrics); a write token may
// call everything.  Clients send
// "authorization: Bearer <token>" metadata.  Tokens are compared in
// constant time (no early exit on the first differing byte or token).
#ifndef F2OBO_SERVER_AUTH_H_
#define F2OBO_SERVER_AUTH_H_

#include <grpcpp/server_context.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace f2obo::server {

enum class Access { kRead, kWrite };

class TokenAuthenticator {
 public:
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromFile(const std::string& path);
  static absl::StatusOr<std::unique_ptr<TokenAuthenticator>> FromText(const std::string& text,
                                                                      const std::string& source);

  // OK, UNAUTHENTICATED (no or unknown token) or PERMISSION_DENIED (a read
  // token on a write method).
  absl::Status Check(const grpc::ServerContext& context, Access needed) const;
  absl::Status CheckToken(const std::string& presented, Access needed) const;

  size_t size() const { return tokens_.size(); }

 private:
  struct Token {
    Access role;
    std::string secret;
  };
  std::vector<Token> tokens_;
};

// The role a token needs to call RPC `method` ("Step") of f2obo.v1.F2obo,
// as the RPC declares it; INTERNAL for a method that declares none (refused,
// never guessed).
absl::StatusOr<Access> RequiredAccess(absl::string_view method);

// The start-up warning for a token file that its group or others may read
// or write (its tokens grant access to every session): names the file, its
// mode and the fix.  Empty when only the owner has access (or the file
// cannot be examined; reading it reports that).
std::string TokenFilePermissionWarning(const std::string& path);

// Equal contents, in time independent of where (or whether) they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_AUTH_H_
