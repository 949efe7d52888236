// f2obo's own small metrics module (prometheus-cpp is not packaged in
// Debian 12): counters, gauges and histograms with labels, rendered in the
// Prometheus text exposition format 0.0.4.
//
//   Registry registry;
//   absl::StatusOr<CounterFamily*> steps = registry.AddCounter(
//       "f2obo_steps_total", "Steps applied.", {"algorithm"});
//   Counter& f2obo_steps = (*steps)->WithLabels({"f2obo"});  // keep this
//   f2obo_steps.Increment();                                 // lock-free
//   std::string text = registry.Render();                    // for /metrics
//
// Names are checked so that Render() always passes `promtool check
// metrics`: the data-model syntax, plus the lint rules that are about the
// family's type (counters end in "_total" and nothing else does, only
// histograms end in "_bucket", "_sum" or "_count", no "le" or "quantile"
// label names) and no two families producing the same sample name.  Style
// lints (camelCase, abbreviated units, colons, which are meant for
// recording rules) are left to the names chosen in code.
//
// Thread-safety: all methods are thread-safe.  The registry's mutex guards
// the list of families and is held by Add* and Render only; series updates
// never touch it (see family.h for the per-family contract).
#ifndef F2OBO_SERVER_METRICS_REGISTRY_H_
#define F2OBO_SERVER_METRICS_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/family.h"
#include "server/metrics/metric.h"

namespace f2obo::metrics {

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Each Add* registers a new family and returns it; the pointer is owned
  // by the registry and valid for its lifetime.  Errors (InvalidArgument
  // for bad names, label names, help or buckets; AlreadyExists for a name
  // that collides with an existing family's samples) name the offender.
  // `help` must be non-empty (promtool flags a family without help).
  absl::StatusOr<CounterFamily*> AddCounter(const std::string& name, const std::string& help,
                                            const std::vector<std::string>& label_names);
  absl::StatusOr<GaugeFamily*> AddGauge(const std::string& name, const std::string& help,
                                        const std::vector<std::string>& label_names);
  // `bucket_bounds`: finite, strictly increasing upper bounds.  A trailing
  // +Inf is accepted and dropped, as the +Inf bucket is always present; an
  // empty list leaves only that bucket.
  absl::StatusOr<HistogramFamily*> AddHistogram(const std::string& name, const std::string& help,
                                                const std::vector<std::string>& label_names,
                                                std::vector<double> bucket_bounds);

  // The whole registry in text format 0.0.4: families in registration
  // order, each family's series sorted by label values.  Families without
  // series are left out.
  std::string Render() const;

 private:
  // Checks everything but the type-specific bucket rules, reserves the
  // family's sample names and appends it.
  template <typename T>
  absl::StatusOr<Family<T>*> Add(const std::string& name, const std::string& help,
                                 const std::vector<std::string>& label_names,
                                 typename T::Config config);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
  // Every sample name the families emit ("x", or "x_bucket", "x_sum",
  // "x_count" for a histogram "x"): Prometheus cannot tell two families
  // apart if they share one.
  absl::flat_hash_set<std::string> sample_names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace f2obo::metrics

#endif  // F2OBO_SERVER_METRICS_REGISTRY_H_
