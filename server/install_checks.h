// What an install checks of what it is given before it builds anything: a
// session spec against the server's limits, an export's reply cache
// against the state it comes with (installs.h).
#ifndef F2OBO_SERVER_INSTALL_CHECKS_H_
#define F2OBO_SERVER_INSTALL_CHECKS_H_

#include <string>

#include "absl/status/statusor.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/f2obo.pb.h"
#include "f2obo/v1/transfer.pb.h"
#include "server/limits.h"

namespace f2obo::server {

// Validates `spec` against `limits` and builds its session config;
// `unread`: what becomes of options its algorithm does not read (refused
// for a spec a client writes, dropped for one a server wrote: imports).
absl::StatusOr<SessionConfig> CheckedConfig(const Limits& limits, const v1::SessionSpec& spec,
                                            UnreadOptions unread = UnreadOptions::kRefuse);

// The exact-metrics period of a session made from `spec`.
int ExactEvery(const v1::SessionSpec& spec, const Session& session);

// The reply cache of an import, against the state it comes with.
absl::Status CheckImportedReplies(const google::protobuf::RepeatedPtrField<v1::StepReply>& replies,
                                  const SessionState& state);

// `s` with its message prefixed by "<name>: ".
absl::Status Named(const std::string& name, const absl::Status& s);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_INSTALL_CHECKS_H_
