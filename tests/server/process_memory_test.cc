// ProcessMemoryGauges: the heap figures follow real allocations, and the
// gauge family renders both states.
#include "server/process_memory.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "server/metrics/registry.h"

namespace f2obo::server {
namespace {

// The number of malloc arenas: malloc_info's XML has one <heap nr=...> each.
int CountArenas() {
  char* text = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&text, &size);
  malloc_info(0, out);
  std::fclose(out);
  const std::string xml(text, size);
  std::free(text);
  int n = 0;
  for (size_t at = xml.find("<heap nr="); at != std::string::npos;
       at = xml.find("<heap nr=", at + 1)) {
    ++n;
  }
  return n;
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

// glibc's default would give each of these threads an arena of its own (up
// to 8 per core); malloc_info lists one <heap> per arena.
TEST(ProcessMemory, AfterTuningThreadsShareAtMostArenaLimitArenas) {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) GTEST_SKIP() << "set by the environment";
  TuneAllocator();
  const int threads = 4 * ArenaLimit() + 4;
  std::vector<std::thread> workers;
  std::atomic<int> allocated{0};
  std::atomic<bool> release{false};
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {  // all alive at once, so none can reuse another's arena
      auto block = std::make_unique<char[]>(1024);
      ++allocated;
      while (!release) std::this_thread::yield();
      EXPECT_EQ(block[0], 0);
    });
  }
  while (allocated < threads) std::this_thread::yield();
  const int arenas = CountArenas();
  release = true;
  for (std::thread& w : workers) w.join();
  EXPECT_GE(arenas, 1);
  EXPECT_LE(arenas, ArenaLimit()) << threads << " threads";
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
