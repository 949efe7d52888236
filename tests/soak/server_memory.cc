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

long HeapKib(int metrics_port, const std::string& state) {
  const std::string text = HttpGet(metrics_port, "/metrics");
  const std::string key = "f2obo_process_heap_bytes{state=\"" + state + "\"} ";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  return static_cast<long>(std::strtod(text.c_str() + at + key.size(), nullptr) / 1024);
}

MemorySample SampleMemory(const ServerProcess& server) {
  return {RssKib(server.pid()), HeapKib(server.metrics_port(), "in_use"),
          HeapKib(server.metrics_port(), "free")};
}

std::string Describe(const MemorySample& m) {
  return std::to_string(m.rss) + " KiB RSS (heap " + std::to_string(m.in_use) + " in use, " +
         std::to_string(m.free) + " free)";
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
