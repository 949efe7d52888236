// What a server allows its sessions, and a call's deadline: read by each of
// the classes that hold and step sessions (session_table.h, installs.h,
// step_runner.h, checkpoints.h).
#ifndef F2OBO_SERVER_LIMITS_H_
#define F2OBO_SERVER_LIMITS_H_

#include <chrono>
#include <cstdint>

namespace f2obo::server {

// One member per F2OBO_LIMIT_FLAG of server_flags.def (the flag's name and
// default; the flag's help says what it limits), and the memory limits.
struct Limits {
#define F2OBO_SERVER_FLAG(type, name, def, rule, help)
#define F2OBO_LIMIT_FLAG(type, name, def, rule, help) type name = def;
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG
  // Per-session state size guard (doubles of y), and the memory of every
  // session together (session_footprint.h's estimates, reserved at
  // creation before anything is allocated; 0: no limit).  f2obo-server
  // derives both from its --max_y_dim and --max_total_state_bytes
  // (DeriveMemoryLimits, machine_memory.h).
  int64_t max_y_dim = 50000000;
  int64_t max_total_state_bytes = 0;
};

// A call's deadline (grpc::ServerContext::deadline()); max(): none.
using Deadline = std::chrono::system_clock::time_point;

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_LIMITS_H_
