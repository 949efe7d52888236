#include "server/metrics/metric.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {

void Counter::AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                            const std::vector<std::string>& label_values, std::string* out) const {
  AppendSample(name, label_names, label_values, "", "", FormatValue(Value()), out);
}

void Gauge::AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                          const std::vector<std::string>& label_values, std::string* out) const {
  AppendSample(name, label_names, label_values, "", "", FormatValue(Value()), out);
}

Histogram::Histogram(const Config& config)
    : config_(config),
      buckets_(std::make_unique<std::atomic<uint64_t>[]>(config.bounds.size() + 1)) {
  // make_unique value-initialises the array, which zeroes the atomics.
}

void Histogram::Observe(double v) {
  const std::vector<double>& bounds = config_.bounds;
  // lower_bound finds the first bound >= v; NaN compares false with
  // everything, so route it to +Inf explicitly instead of bucket 0.
  const size_t i =
      std::isnan(v)
          ? bounds.size()
          : static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  internal::AtomicAdd(sum_, v);
}

uint64_t Histogram::Count() const {
  uint64_t total = 0;
  for (size_t i = 0; i <= config_.bounds.size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> counts(config_.bounds.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    counts[i] = running;
  }
  return counts;
}

void Histogram::AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                              const std::vector<std::string>& label_values,
                              std::string* out) const {
  const std::vector<uint64_t> counts = CumulativeCounts();
  const std::string bucket_name = absl::StrCat(name, "_bucket");
  for (size_t i = 0; i < counts.size(); ++i) {
    const std::string le = i < config_.bounds.size() ? FormatValue(config_.bounds[i]) : "+Inf";
    AppendSample(bucket_name, label_names, label_values, "le", le, absl::StrCat(counts[i]), out);
  }
  AppendSample(absl::StrCat(name, "_sum"), label_names, label_values, "", "", FormatValue(Sum()),
               out);
  AppendSample(absl::StrCat(name, "_count"), label_names, label_values, "", "",
               absl::StrCat(counts.back()), out);
}

}  // namespace f2obo::metrics
