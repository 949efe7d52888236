// The three series types: one labelled time series each.
//
// Series are created by their family (family.h) and are not copyable or
// movable, so the references a family hands out stay put.
//
// Thread-safety: every method of Counter, Gauge and Histogram is safe to
// call concurrently with every other and with rendering.  Updates are
// lock-free atomics (relaxed ordering: a scrape needs each value to be
// some recent value, not a consistent cut across series), because they
// sit on the request path.
#ifndef F2OBO_SERVER_METRICS_METRIC_H_
#define F2OBO_SERVER_METRICS_METRIC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace f2obo::metrics {

namespace internal {

// Adds `v` to `a` with a compare-and-swap loop (std::atomic<double> has no
// fetch_add before C++20).
inline void AtomicAdd(std::atomic<double>& a, double v) {
  double old = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(old, old + v, std::memory_order_relaxed)) {
  }
}

static_assert(std::atomic<double>::is_always_lock_free, "series updates must not take a lock");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "series updates must not take a lock");

}  // namespace internal

// A monotonically non-decreasing total.
class Counter {
 public:
  struct Config {};
  static constexpr char kTypeName[] = "counter";

  explicit Counter(const Config&) {}
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `v`.  A negative or NaN `v` is ignored: a counter that goes down
  // reads as a process restart to rate(), and the hot path has no caller
  // that could act on an error.
  void Increment(double v = 1) {
    if (v >= 0) internal::AtomicAdd(value_, v);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

  // Appends this series' sample lines (text format) to `out`.
  void AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                     const std::vector<std::string>& label_values, std::string* out) const;

 private:
  std::atomic<double> value_{0};
};

// A value that can go up and down.
class Gauge {
 public:
  struct Config {};
  static constexpr char kTypeName[] = "gauge";

  explicit Gauge(const Config&) {}
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { internal::AtomicAdd(value_, v); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

  void AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                     const std::vector<std::string>& label_values, std::string* out) const;

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets with fixed upper bounds.
class Histogram {
 public:
  struct Config {
    // Finite, strictly increasing upper bounds; the "+Inf" bucket is implicit.
    std::vector<double> bounds;
  };
  static constexpr char kTypeName[] = "histogram";

  // `config` is the family's and must outlive the series.
  explicit Histogram(const Config& config);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Counts `v` into the first bucket whose bound is >= v ("le" semantics)
  // and adds it to the sum.  NaN lands in the +Inf bucket and makes the sum
  // NaN, as in the Go client: the observation happened, so it is counted.
  void Observe(double v);

  // Snapshot accessors.  Each reads atomics one at a time, so under
  // concurrent Observe calls they may be mutually inconsistent by the
  // in-flight observations.
  uint64_t Count() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  // Cumulative counts, one per bound plus the +Inf bucket last.
  std::vector<uint64_t> CumulativeCounts() const;
  const std::vector<double>& bounds() const { return config_.bounds; }

  // Renders _bucket lines, then _sum and _count.  _count is the +Inf bucket
  // of the same snapshot, so the two always agree as Prometheus requires.
  void AppendSamples(const std::string& name, const std::vector<std::string>& label_names,
                     const std::vector<std::string>& label_values, std::string* out) const;

 private:
  const Config& config_;
  // Non-cumulative per-bucket counts (one atomic add per Observe); index
  // bounds.size() is the +Inf bucket.  Cumulated when read.
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0};
};

}  // namespace f2obo::metrics

#endif  // F2OBO_SERVER_METRICS_METRIC_H_
