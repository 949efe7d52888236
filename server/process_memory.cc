#include "server/process_memory.h"

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

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

void TuneAllocator() {
#if defined(__GLIBC__)
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, ArenaLimit());
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") == nullptr) {
    mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes);
  }
#endif
}

void ReturnFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

namespace {

metrics::GaugeFamily* AddGaugeOrDie(metrics::Registry* registry, const char* name, const char* help,
                                    std::vector<std::string> labels) {
  absl::StatusOr<metrics::GaugeFamily*> family = registry->AddGauge(name, help, std::move(labels));
  if (!family.ok()) {  // fixed, valid names: a programming error
    std::fprintf(stderr, "f2obo-server: metric registration: %s\n",
                 std::string(family.status().message()).c_str());
    std::abort();
  }
  return *family;
}

}  // namespace

ProcessMemoryGauges::ProcessMemoryGauges(metrics::Registry* registry, const BufferTally* buffers)
    : buffers_(buffers) {
  metrics::GaugeFamily* heap = AddGaugeOrDie(
      registry, "f2obo_process_heap_bytes",
      "The server's heap: bytes allocated (state=\"in_use\") and bytes freed but kept by the "
      "allocator (state=\"free\"), from glibc's mallinfo2 at scrape time.",
      {"state"});
  in_use_ = &heap->WithLabels({"in_use"});
  free_ = &heap->WithLabels({"free"});
  if (buffers_ == nullptr) return;
  buffer_bytes_ = &AddGaugeOrDie(registry, "f2obo_metrics_buffer_bytes",
                                 "Bytes held by the sessions' rings of published step metrics "
                                 "(serialized sizes plus a fixed overhead a message).",
                                 {})
                       ->WithLabels({});
  buffers_full_ = &AddGaugeOrDie(registry, "f2obo_metrics_buffers_full",
                                 "Sessions whose ring of step metrics is at its byte budget "
                                 "(it drops its oldest message for each new one).",
                                 {})
                       ->WithLabels({});
  jobs_queued_ = &AddGaugeOrDie(registry, "f2obo_metrics_jobs_queued",
                                "Applied steps whose metrics job is queued, not yet processed "
                                "(each holds the step's batches until then).",
                                {})
                      ->WithLabels({});
}

void ProcessMemoryGauges::Refresh() {
  const HeapUsage u = CurrentHeapUsage();
  in_use_->Set(static_cast<double>(u.in_use_bytes));
  free_->Set(static_cast<double>(u.free_bytes));
  if (buffers_ == nullptr) return;
  buffer_bytes_->Set(static_cast<double>(buffers_->bytes.load()));
  buffers_full_->Set(static_cast<double>(buffers_->full_sessions.load()));
  jobs_queued_->Set(static_cast<double>(buffers_->queued_jobs.load()));
}

}  // namespace f2obo::server
