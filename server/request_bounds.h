// The bound on every string a request carries: session and group ids,
// member names, routing keys, fence targets, algorithm and family names.
// Checked before anything else an RPC does, so that no over-long value is
// looked up, stored, or echoed in an error message or in every later
// answer (a 10,000-byte fence target made each UNAVAILABLE of its key
// exceed gRPC's metadata limit on the client, which then stopped instead
// of retrying).
#ifndef F2OBO_SERVER_REQUEST_BOUNDS_H_
#define F2OBO_SERVER_REQUEST_BOUNDS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace f2obo::server {

// Every string field of a request, at any depth, holds at most this many
// bytes (the proto's "Identifiers" convention).
inline constexpr size_t kMaxStringBytes = 256;

// INVALID_ARGUMENT naming the first string field of `request` (e.g.
// "members[3].name") longer than kMaxStringBytes, with its length; OK
// otherwise.  The value itself is not quoted.
absl::Status CheckStringBounds(const google::protobuf::Message& request);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_REQUEST_BOUNDS_H_
