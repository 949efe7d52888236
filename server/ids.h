// The names clients choose, checked in one place: session ids and group
// (and group member) names.  A group name has no '.', because a member's
// session id is "<group>.<member>" and a routing key is an id up to its
// first '.' (client/session_routing.h): members route with their group.
//
// Thread-safety: pure functions.
#ifndef F2OBO_SERVER_IDS_H_
#define F2OBO_SERVER_IDS_H_

#include <string_view>

namespace f2obo::server {

// What error messages quote.
inline constexpr char kSessionIdPattern[] = "[A-Za-z0-9._-]{1,64}";
inline constexpr char kGroupNamePattern[] = "[A-Za-z0-9_-]{1,32}";

// Whether `id` matches kSessionIdPattern.
bool IsSessionId(std::string_view id);
// Whether `name` matches kGroupNamePattern.
bool IsGroupName(std::string_view name);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_IDS_H_
