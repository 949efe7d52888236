#include "server/store_metrics.h"

#include <vector>

namespace f2obo::server {
namespace {

metrics::Counter* CounterOf(metrics::Registry* r, const char* name, const char* help) {
  absl::StatusOr<metrics::CounterFamily*> family = r->AddCounter(name, help, {});
  return family.ok() ? &(*family)->WithLabels({}) : nullptr;
}

}  // namespace

StoreMetrics::StoreMetrics(metrics::Registry* registry, const SessionManager* sessions,
                           SessionStore* store)
    : sessions_(sessions), store_(store) {
  if (absl::StatusOr<metrics::GaugeFamily*> g = registry->AddGauge(
          "f2obo_sessions_resident",
          "Sessions held in memory (a shared store's others are loaded when asked for).", {});
      g.ok()) {
    resident_ = &(*g)->WithLabels({});
  }
  if (store == nullptr) return;
  // From a loopback commit (~0.2 ms) to a database far away or failing over.
  absl::StatusOr<metrics::HistogramFamily*> commits = registry->AddHistogram(
      "f2obo_store_commit_seconds",
      "Latency of the store's committed write transactions (a shared store's), in seconds.", {},
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5});
  if (commits.ok()) {
    metrics::Histogram* h = &(*commits)->WithLabels({});
    store->ObserveCommits([h](double seconds) { h->Observe(seconds); });
  }
  conflicts_ = CounterOf(registry, "f2obo_store_conflicts_resolved_total",
                         "Writes that found the stored session moved on by another server "
                         "(compare-and-set) and were answered from it, reloaded.");
  reconnects_ = CounterOf(registry, "f2obo_store_reconnects_total",
                          "Connections to the database remade after one broke.");
  read_back_ = CounterOf(registry, "f2obo_store_commits_read_back_total",
                         "Commits whose outcome was unknown (the connection broke during "
                         "COMMIT), resolved by reading the stored session back.");
  loaded_ = CounterOf(registry, "f2obo_store_sessions_loaded_total",
                      "Sessions loaded from a shared store when first asked for.");
  evicted_ = CounterOf(registry, "f2obo_store_sessions_evicted_total",
                       "Idle sessions dropped from memory (not from the store) to stay within "
                       "--max_resident_sessions or --max_total_state_bytes.");
}

void StoreMetrics::Advance(metrics::Counter* counter, int64_t now, int64_t* seen) {
  if (counter != nullptr && now > *seen) counter->Increment(static_cast<double>(now - *seen));
  *seen = now;
}

void StoreMetrics::Refresh() {
  if (resident_ != nullptr) resident_->Set(static_cast<double>(sessions_->size()));
  if (store_ == nullptr) return;
  absl::MutexLock lock(&mu_);
  Advance(conflicts_, sessions_->conflicts_resolved(), &seen_conflicts_);
  Advance(reconnects_, store_->reconnects(), &seen_reconnects_);
  Advance(read_back_, store_->commits_read_back(), &seen_read_back_);
  Advance(loaded_, sessions_->loads(), &seen_loaded_);
  Advance(evicted_, sessions_->evictions(), &seen_evicted_);
}

}  // namespace f2obo::server
