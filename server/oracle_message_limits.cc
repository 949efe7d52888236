#include "server/oracle_message_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace f2obo::server {

absl::Status CheckOracleMessages(const FamilyConfig& family, int64_t max_message_bytes) {
  const int64_t dim = std::max<int64_t>({family.x_dim, family.y_dim, 0});
  const int64_t bytes = 8 * dim + kOracleMessageSlack;
  if (max_message_bytes <= 0 || bytes <= max_message_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      absl::StrCat("spec.family: an oracle session sends each vector of ", dim,
                   " float64 (its points and gradients) in one message of about ", bytes,
                   " bytes, beyond the server's message limit of ", max_message_bytes,
                   " bytes (--max_message_bytes; raise it on the server and on its clients)"));
}

}  // namespace f2obo::server
