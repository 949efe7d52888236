#include "server/process_memory.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace f2obo::server {

HeapUsage CurrentHeapUsage() {
  HeapUsage u;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = mallinfo2();  // every arena, under their locks
  u.in_use_bytes = static_cast<int64_t>(m.uordblks + m.hblkhd);
  u.free_bytes = static_cast<int64_t>(m.fordblks);
#endif
  return u;
}

ProcessMemoryGauges::ProcessMemoryGauges(metrics::Registry* registry) {
  absl::StatusOr<metrics::GaugeFamily*> heap = registry->AddGauge(
      "f2obo_process_heap_bytes",
      "The server's heap: bytes allocated (state=\"in_use\") and bytes freed but kept by the "
      "allocator (state=\"free\"), from glibc's mallinfo2 at scrape time.",
      {"state"});
  if (!heap.ok()) {  // fixed, valid names: a programming error
    std::fprintf(stderr, "f2obo-server: metric registration: %s\n",
                 std::string(heap.status().message()).c_str());
    std::abort();
  }
  in_use_ = &(*heap)->WithLabels({"in_use"});
  free_ = &(*heap)->WithLabels({"free"});
}

void ProcessMemoryGauges::Refresh() {
  const HeapUsage u = CurrentHeapUsage();
  in_use_->Set(static_cast<double>(u.in_use_bytes));
  free_->Set(static_cast<double>(u.free_bytes));
}

}  // namespace f2obo::server
