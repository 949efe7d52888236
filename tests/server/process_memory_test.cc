// ProcessMemoryGauges: the heap figures follow real allocations, and the
// gauge family renders both states.
#include "server/process_memory.h"

#include <gtest/gtest.h>

#include <malloc.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "server/metrics/registry.h"

namespace f2obo::server {
namespace {

// Bytes in blocks mapped on their own (mallinfo2's hblkhd).
int64_t CurrentMappedBytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  return static_cast<int64_t>(mallinfo2().hblkhd);
#else
  return 0;
#endif
}

TEST(ProcessMemory, InUseGrowsByAnAllocationAndShrinksWhenItIsFreed) {
  constexpr int64_t kBytes = int64_t{64} << 20;
  const HeapUsage before = CurrentHeapUsage();
  if (before.in_use_bytes == 0) GTEST_SKIP() << "no mallinfo2 (not glibc >= 2.33)";
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);  // touched, so it is not optimized away
  const HeapUsage during = CurrentHeapUsage();
  EXPECT_GE(during.in_use_bytes - before.in_use_bytes, kBytes);
  EXPECT_EQ(block[kBytes - 1], 1);
  block.reset();
  const HeapUsage after = CurrentHeapUsage();
  EXPECT_LE(after.in_use_bytes, during.in_use_bytes - kBytes);
}

// glibc's default would raise the threshold to 4 MiB after the first free
// below, and serve the second block from an arena that keeps it.
TEST(ProcessMemory, AfterTuningLargeBlocksAreMappedEvenAfterALargerOneWasFreed) {
  if (CurrentHeapUsage().in_use_bytes == 0) GTEST_SKIP() << "no mallinfo2 (not glibc >= 2.33)";
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) GTEST_SKIP() << "set by the environment";
  TuneAllocator();
  auto first = std::make_unique<char[]>(4 << 20);
  std::memset(first.get(), 1, 4 << 20);
  first.reset();
  constexpr int64_t kBytes = 2 * kMmapThresholdBytes;
  const int64_t mapped_before = CurrentMappedBytes();
  auto second = std::make_unique<char[]>(kBytes);
  std::memset(second.get(), 2, kBytes);
  EXPECT_GE(CurrentMappedBytes() - mapped_before, kBytes);
  EXPECT_EQ(second[kBytes - 1], 2);
}

TEST(ProcessMemory, TheGaugesRenderInUseAndFreeAfterRefresh) {
  metrics::Registry registry;
  ProcessMemoryGauges gauges(&registry);
  gauges.Refresh();
  const std::string text = registry.Render();
  EXPECT_NE(text.find("# TYPE f2obo_process_heap_bytes gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("f2obo_process_heap_bytes{state=\"in_use\"} "), std::string::npos) << text;
  EXPECT_NE(text.find("f2obo_process_heap_bytes{state=\"free\"} "), std::string::npos) << text;
  EXPECT_EQ(text.find("f2obo_process_heap_bytes{state=\"in_use\"} 0\n"), std::string::npos)
      << "in use cannot be 0 in a running process: " << text;
}

}  // namespace
}  // namespace f2obo::server
