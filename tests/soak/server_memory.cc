#include "tests/soak/server_memory.h"

#include <cstdlib>
#include <fstream>

namespace f2obo::testing {

long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

namespace {

// The value of `series` in a /metrics page, or -1 if absent.
double ValueIn(const std::string& text, const std::string& series) {
  const std::string key = "\n" + series + " ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + key.size(), nullptr);
}

long KibOf(double bytes) { return bytes < 0 ? -1 : static_cast<long>(bytes / 1024); }

}  // namespace

double MetricValue(int metrics_port, const std::string& series) {
  return ValueIn(HttpGet(metrics_port, "/metrics"), series);
}

long HeapKib(int metrics_port, const std::string& state) {
  return KibOf(MetricValue(metrics_port, "f2obo_process_heap_bytes{state=\"" + state + "\"}"));
}

MemorySample SampleMemory(const ServerProcess& server) {
  const std::string text = HttpGet(server.metrics_port(), "/metrics");  // one scrape
  return {RssKib(server.pid()), KibOf(ValueIn(text, "f2obo_process_heap_bytes{state=\"in_use\"}")),
          KibOf(ValueIn(text, "f2obo_process_heap_bytes{state=\"free\"}")),
          KibOf(ValueIn(text, "f2obo_metrics_buffer_bytes")),
          static_cast<long>(ValueIn(text, "f2obo_metrics_jobs_queued"))};
}

std::string Describe(const MemorySample& m) {
  return std::to_string(m.rss) + " KiB RSS (heap " + std::to_string(m.in_use) + " in use, " +
         std::to_string(m.free) + " free; metrics rings " + std::to_string(m.metrics_kib) +
         " KiB, " + std::to_string(m.queued_jobs) + " metrics jobs queued)";
}

HeapSampler::HeapSampler(int metrics_port, Clock::time_point start)
    : thread_([this, metrics_port, start] {
        std::unique_lock<std::mutex> lock(mu_);
        while (!done_) {
          lock.unlock();
          const long in_use = HeapKib(metrics_port, "in_use");
          const double at = std::chrono::duration<double>(Clock::now() - start).count();
          lock.lock();
          if (in_use > 0) samples_.emplace_back(at, in_use);
          // (A sampling period, not synchronization: the loop ends on done_.)
          cv_.wait_for(lock, std::chrono::seconds(2), [&] { return done_; });
        }
      }) {}

void HeapSampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

long HeapSampler::Floor(double from, double to) const {
  long floor = -1;
  for (const auto& [at, kib] : samples_) {
    if (at >= from && at <= to && (floor < 0 || kib < floor)) floor = kib;
  }
  return floor;
}

}  // namespace f2obo::testing
