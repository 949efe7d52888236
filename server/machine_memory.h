// The memory this server may count on, for the limits derived from it at
// start (main.cc): the physical memory, or the memory limit of the server's
// cgroup (a container's) when that is lower.
#ifndef F2OBO_SERVER_MACHINE_MEMORY_H_
#define F2OBO_SERVER_MACHINE_MEMORY_H_

#include <cstdint>
#include <string>

namespace f2obo::server {

struct MachineMemory {
  int64_t bytes = 0;   // what the limits are derived from
  std::string source;  // "physical memory" or "cgroup memory limit"
};

MachineMemory AvailableMemory();

// The memory limits of Limits (session_manager.h) from the flags, a value
// <= 0 meaning "derive it": max_total_state_bytes is half of `memory`,
// max_y_dim the largest y whose session fits that budget (at most 2^31 - 1,
// the proto's int32).  `explanation` says where each came from, for the
// start-up line.
struct MemoryLimits {
  int64_t max_total_state_bytes = 0;
  int64_t max_y_dim = 0;
  std::string explanation;
};
MemoryLimits DeriveMemoryLimits(int64_t max_total_state_bytes, int64_t max_y_dim,
                                const MachineMemory& memory);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_MACHINE_MEMORY_H_
