// What an oracle session's messages can hold: checked at create (the
// session table's admission) and used by the oracle stream to split a
// round's queries over several requests.  No gRPC here, so that the
// session sources (and the fuzz harness that compiles them) need none.
#ifndef F2OBO_SERVER_ORACLE_MESSAGE_LIMITS_H_
#define F2OBO_SERVER_ORACLE_MESSAGE_LIMITS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/family_config.h"

namespace f2obo::server {

// The bytes a message may take beyond its vectors (ids, flags, framing).
inline constexpr int64_t kOracleMessageSlack = 64 << 10;

// A y of at least this many bytes (float64) gets its answers one y-sized
// vector a message (StreamOracle::EvaluateGroups): 4 MiB, 524,288
// parameters, where a round's work dwarfs a round trip on loopback.
inline constexpr int64_t kOracleOneAnswerBytes = 4 << 20;

// OK if an oracle session of this family can send each of its vectors (x
// or y: a point, a gradient) in a message of `max_message_bytes`; else
// RESOURCE_EXHAUSTED naming y_dim, the limit and its flag.
absl::Status CheckOracleMessages(const FamilyConfig& family, int64_t max_message_bytes);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_ORACLE_MESSAGE_LIMITS_H_
