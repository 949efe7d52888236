// The server's heap as the allocator sees it, exported on /metrics at each
// scrape: what is allocated (in use) and what the allocator holds free.
// Resident memory alone cannot tell a leak (in use grows) from allocator
// retention under many threads (free grows, glibc keeps per-thread arenas);
// these two can.
#ifndef F2OBO_SERVER_PROCESS_MEMORY_H_
#define F2OBO_SERVER_PROCESS_MEMORY_H_

#include <cstdint>

#include "server/metrics/registry.h"

namespace f2obo::server {

struct HeapUsage {
  int64_t in_use_bytes = 0;  // allocated and not freed (mmapped chunks included)
  int64_t free_bytes = 0;    // freed, kept by the allocator (not returned to the OS)
};

// glibc's mallinfo2 summed over every arena; zeros where it is unavailable.
HeapUsage CurrentHeapUsage();

// Gauge f2obo_process_heap_bytes{state="in_use"|"free"}.
class ProcessMemoryGauges {
 public:
  explicit ProcessMemoryGauges(metrics::Registry* registry);
  void Refresh();  // before rendering the registry

 private:
  metrics::Gauge* in_use_ = nullptr;
  metrics::Gauge* free_ = nullptr;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_PROCESS_MEMORY_H_
