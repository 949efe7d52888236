#include "server/machine_memory.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/session_footprint.h"

namespace f2obo::server {
namespace {

// A cgroup's limit in bytes, or 0 when there is none ("max" in cgroup v2,
// a huge number in v1) or the file is absent.
int64_t CgroupLimit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    const long long v = std::stoll(text);
    return v > 0 && v < (int64_t{1} << 60) ? v : 0;
  } catch (...) {
    return 0;
  }
}

}  // namespace

MachineMemory AvailableMemory() {
  MachineMemory m;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  m.bytes = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
  m.source = "physical memory";
  for (const char* path : {"/sys/fs/cgroup/memory.max",                       // v2
                           "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {  // v1
    const int64_t limit = CgroupLimit(path);
    if (limit > 0 && (m.bytes == 0 || limit < m.bytes)) {
      m.bytes = limit;
      m.source = "cgroup memory limit";
    }
  }
  return m;
}

MemoryLimits DeriveMemoryLimits(int64_t max_total_state_bytes, int64_t max_y_dim,
                                const MachineMemory& memory) {
  MemoryLimits out;
  std::string total_from = "--max_total_state_bytes";
  out.max_total_state_bytes = max_total_state_bytes;
  if (out.max_total_state_bytes <= 0) {
    out.max_total_state_bytes = memory.bytes / 2;
    total_from = absl::StrCat("half of ", memory.bytes, " bytes of ", memory.source);
  }
  std::string y_from = "--max_y_dim";
  out.max_y_dim = max_y_dim;
  if (out.max_y_dim <= 0) {
    out.max_y_dim = std::clamp<int64_t>(out.max_total_state_bytes / kMemoryBytesPerYEntry, 1,
                                        std::numeric_limits<int32_t>::max());
    y_from = "the largest y whose session fits max_total_state_bytes";
  }
  out.explanation = absl::StrCat("max_total_state_bytes = ", out.max_total_state_bytes, " (",
                                 total_from, "), max_y_dim = ", out.max_y_dim, " (", y_from, ")");
  return out;
}

}  // namespace f2obo::server
