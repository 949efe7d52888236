// The server's heap as the allocator sees it, exported on /metrics at each
// scrape: what is allocated (in use) and what the allocator holds free.
// Resident memory alone cannot tell a leak (in use grows) from allocator
// retention under many threads (free grows, glibc keeps per-thread arenas);
// these two can.
#ifndef F2OBO_SERVER_PROCESS_MEMORY_H_
#define F2OBO_SERVER_PROCESS_MEMORY_H_

#include <cstddef>
#include <cstdint>

#include "server/metrics/registry.h"
#include "server/metrics_pipeline.h"

namespace f2obo::server {

struct HeapUsage {
  int64_t in_use_bytes = 0;  // allocated and not freed (mmapped chunks included)
  int64_t free_bytes = 0;    // freed, kept by the allocator (not returned to the OS)
};

// glibc's mallinfo2 summed over every arena; zeros where it is unavailable.
HeapUsage CurrentHeapUsage();

// Called once at start, before threads, so that resident memory follows
// the heap in use instead of the history of peaks (bench/RESULTS.md, "Soak
// memory"; without both settings the soak's resident memory rose 14-18%
// over 135 s while the heap in use stayed flat):
//  * allocations of kMmapThresholdBytes or more are mapped on their own and
//    unmapped when freed.  glibc's default raises that threshold to the
//    largest block freed so far (up to 32 MiB), so after one large request
//    (a message near --max_message_bytes) the later ones came from the
//    arenas, which grew to the largest concurrency of them ever seen;
//  * at most max(2, hardware threads) arenas instead of 8 per core: each
//    gRPC thread otherwise settles in an arena of its own whose free space
//    no other thread reuses.
// MALLOC_MMAP_THRESHOLD_ / MALLOC_ARENA_MAX in the environment win.
inline constexpr size_t kMmapThresholdBytes = 128 * 1024;
void TuneAllocator();

// Gauge f2obo_process_heap_bytes{state="in_use"|"free"} and, given the
// metrics pipeline's tally, the largest structure that grows with sessions:
// f2obo_metrics_buffer_bytes (every session's ring of published step
// metrics) and f2obo_metrics_buffers_full (sessions whose ring is at its
// budget, SessionMetrics::kBufferedBytes, and drops its oldest messages),
// and f2obo_metrics_jobs_queued (steps whose metrics are not yet computed;
// each holds the step's batches).
class ProcessMemoryGauges {
 public:
  explicit ProcessMemoryGauges(metrics::Registry* registry, const BufferTally* buffers = nullptr);
  void Refresh();  // before rendering the registry

 private:
  const BufferTally* const buffers_;
  metrics::Gauge* in_use_ = nullptr;
  metrics::Gauge* free_ = nullptr;
  metrics::Gauge* buffer_bytes_ = nullptr;
  metrics::Gauge* buffers_full_ = nullptr;
  metrics::Gauge* jobs_queued_ = nullptr;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_PROCESS_MEMORY_H_
