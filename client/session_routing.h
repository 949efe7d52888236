// Session routing metadata for a front proxy (deploy/k8s: Envoy with a
// ring hash on a request header), so that every call about one session
// reaches the one replica that holds it.
//
// When ClientOptions::session_header is set (the default), session-scoped
// calls carry "x-f2obo-session: <routing key>", where the routing key is
// the session id up to its first '.': a group's members "<group>.<member>"
// route with their group (the group calls send the group id), so a group
// stays on one replica.  Which request field names the session or group is
// declared once, at each RPC of the proto (its option (f2obo.v1.policy),
// proto/f2obo/v1/rpc_policy.proto).  The key is taken from the
// request message by a channel interceptor, so every call made through
// Client::stub() gets it, with one caveat: a bidirectional stream (Steps,
// StepsGroup, OracleSteps) sends its metadata when it opens, before any message, unless
// the context is corked; call PrepareStreamContext(&ctx) (or
// ctx.set_initial_metadata_corked(true)) before opening one, and the first
// Write carries the header.  Calls without a session (ListSessions, health,
// CreateSession without an id) carry none: a proxy routes them anywhere.
#ifndef F2OBO_CLIENT_SESSION_ROUTING_H_
#define F2OBO_CLIENT_SESSION_ROUTING_H_

#include <grpcpp/support/client_interceptor.h>

#include <memory>
#include <string>

#include "absl/strings/string_view.h"

namespace f2obo::client {

inline constexpr char kSessionHeader[] = "x-f2obo-session";

// The session id up to its first '.' ("" for "").
std::string SessionRoutingKey(absl::string_view session_id);

// Adds the header from each request of the f2obo.v1.F2obo methods that
// name a session or a group, by their routing_fields.
std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>
SessionRoutingInterceptorFactory();

// Corks the initial metadata of a streaming context so that the header,
// which depends on the first message, can be added to it.
void PrepareStreamContext(grpc::ClientContext* ctx);

}  // namespace f2obo::client

#endif  // F2OBO_CLIENT_SESSION_ROUTING_H_
