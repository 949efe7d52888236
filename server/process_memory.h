// The server's heap as the allocator sees it, exported on /metrics at each
// scrape: what is allocated (in use) and what the allocator holds free.
// Resident memory alone cannot tell a leak (in use grows) from allocator
// retention under many threads (free grows, glibc keeps per-thread arenas);
// these two can.
#ifndef F2OBO_SERVER_PROCESS_MEMORY_H_
#define F2OBO_SERVER_PROCESS_MEMORY_H_

#include <algorithm>
#include <cstdint>
#include <thread>

#include "server/metrics/registry.h"
#include "server/metrics_pipeline.h"

namespace f2obo::server {

struct HeapUsage {
  int64_t in_use_bytes = 0;  // allocated and not freed (mmapped chunks included)
  int64_t free_bytes = 0;    // freed, kept by the allocator (not returned to the OS)
};

// glibc's mallinfo2 summed over every arena; zeros where it is unavailable.
HeapUsage CurrentHeapUsage();

// The most malloc arenas the server uses: max(2, hardware threads).
inline int ArenaLimit() {
  return static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
}

// Called once at start, before threads: at most ArenaLimit() malloc arenas
// instead of glibc's 8 per core.  Each gRPC thread otherwise settles in an
// arena of its own whose free space no other thread reuses, and resident
// memory follows the history of peaks rather than the heap in use
// (bench/RESULTS.md, "Memory": the soak).  MALLOC_ARENA_MAX in the environment
// wins.  (A fixed mmap threshold of 128 KiB was tried too: it halved the
// 8 x 784 steps/s, every ~130 KB state copy becoming an mmap.)  And a
// fixed mmap threshold of kMmapThresholdBytes: glibc's own threshold rises
// to the largest block freed (up to 32 MiB), after which the y-sized
// vectors of a large session (8 MB at 10^6 parameters) come from an arena
// and, freed, stay resident there; from mmap they go back to the OS when
// freed (an oracle session frees its round's copies between steps:
// core/session.h).  MALLOC_MMAP_THRESHOLD_ in the environment wins.
inline constexpr int kMmapThresholdBytes = 4 << 20;
void TuneAllocator();

// Returns the allocator's free pages to the OS (glibc's malloc_trim: also
// the whole free pages inside its arenas, not only at their tops).  Called
// after each step of an oracle session: a step's answers arrive as
// megabytes of gRPC slices below the mmap threshold, and once freed they
// stay resident as the arenas' free space (measured: 24 MB after one
// session of 10^6 parameters stepped, three copies of its y) unless
// trimmed.  Costs a walk of the arenas, small beside an oracle step's
// round trips.
void ReturnFreeMemory();

// Gauge f2obo_process_heap_bytes{state="in_use"|"free"} and, given the
// metrics pipeline's tally, the largest structure that grows with sessions:
// f2obo_metrics_buffer_bytes (every session's ring of published step
// metrics) and f2obo_metrics_buffers_full (sessions whose ring is at its
// budget, --metrics_buffer_bytes, and drops its oldest messages),
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
