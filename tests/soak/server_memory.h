// The soak test's view of the server's memory: resident set size from
// /proc, heap in use and free from its /metrics (f2obo_process_heap_bytes),
// and a sampler of the heap in use whose floor over a window ignores
// transient backlogs while a leak raises it.
#ifndef F2OBO_TESTS_SOAK_SERVER_MEMORY_H_
#define F2OBO_TESTS_SOAK_SERVER_MEMORY_H_

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/server/server_process.h"

namespace f2obo::testing {

// Resident set size of `pid` in KiB, or -1.
long RssKib(pid_t pid);

// The value of `series` (a name with its labels, as rendered) on the
// server's /metrics, or -1 if absent.
double MetricValue(int metrics_port, const std::string& series);

// f2obo_process_heap_bytes{state=`state`} from /metrics in KiB, or -1.
long HeapKib(int metrics_port, const std::string& state);

// RSS, heap in use and heap free (KiB) of the server, printed together.
struct MemorySample {
  long rss = -1, in_use = -1, free = -1;
  long metrics_kib = -1, queued_jobs = -1;  // f2obo_metrics_buffer_bytes, _jobs_queued
};
MemorySample SampleMemory(const ServerProcess& server);
std::string Describe(const MemorySample& m);

// Samples the heap in use every 2 s from construction until Stop().
class HeapSampler {
 public:
  using Clock = std::chrono::steady_clock;
  HeapSampler(int metrics_port, Clock::time_point start);
  ~HeapSampler() { Stop(); }
  void Stop();
  // The least heap in use (KiB) sampled between `from` and `to` seconds
  // after start, or -1 if none.  After Stop().
  long Floor(double from, double to) const;
  size_t samples() const { return samples_.size(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;                             // guarded by mu_
  std::vector<std::pair<double, long>> samples_;  // (s since start, KiB); guarded by mu_
  std::thread thread_;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SOAK_SERVER_MEMORY_H_
