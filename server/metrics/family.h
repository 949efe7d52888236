// A metric family: one name, help text and set of label names, and the
// series (one per distinct tuple of label values) that share them.
//
// Families are created and owned by a Registry (registry.h) and live as
// long as it does.
//
// Thread-safety: all methods are thread-safe.  Looking a series up takes
// the family's own mutex (shared, unless the series has to be created);
// updating a series through a reference obtained earlier takes no lock at
// all, so hot paths should keep the reference rather than look it up per
// event.
//
// Lifetime contract: a reference returned by WithLabels stays valid until
// that series is dropped by Remove() or Clear() (or the registry is
// destroyed).  Whoever removes a series must make sure no thread still uses
// a reference to it -- e.g. drop a session's series from the session
// object's destructor, after every request that could hold the reference
// has let go of the session.
#ifndef F2OBO_SERVER_METRICS_FAMILY_H_
#define F2OBO_SERVER_METRICS_FAMILY_H_

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/metric.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {

// What the registry needs from any family, whatever its series type.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // "counter", "gauge" or "histogram".
  virtual const char* type_name() const = 0;
  // Appends the family's block (HELP, TYPE, samples sorted by label values)
  // to `out`; appends nothing while the family has no series.
  virtual void Render(std::string* out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, std::vector<std::string> label_names)
      : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}

 private:
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
};

template <typename T>
class Family final : public FamilyBase {
 public:
  // Use Registry::Add*; public only so the registry can make_unique it.
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         typename T::Config config)
      : FamilyBase(std::move(name), std::move(help), std::move(label_names)),
        config_(std::move(config)) {
    // A family without labels has exactly one series; create it now so it
    // is exported (as 0) from the start instead of after its first update.
    if (this->label_names().empty()) WithLabels({});
  }

  // The series for `label_values` (one per label name, in order), created
  // on first use.  Values are stored UTF-8-sanitised (see SanitizeUtf8), so
  // a value with invalid bytes names the same series as its cleaned form.
  // Returns InvalidArgument when the number of values is wrong.
  absl::StatusOr<T*> TryWithLabels(std::vector<std::string> label_values) {
    if (label_values.size() != label_names().size()) {
      return absl::InvalidArgumentError(absl::StrCat("metric \"", name(), "\" has ",
                                                     label_names().size(), " label(s), got ",
                                                     label_values.size(), " value(s)"));
    }
    for (std::string& v : label_values) v = SanitizeUtf8(v);
    {
      absl::ReaderMutexLock lock(&mu_);
      auto it = series_.find(label_values);
      if (it != series_.end()) return it->second.get();
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = series_.try_emplace(std::move(label_values));
    if (inserted) it->second = std::make_unique<T>(config_);
    return it->second.get();
  }

  // As TryWithLabels, for label counts fixed in code: a wrong count is a
  // programming error, and it aborts with a message rather than hand back a
  // series nobody will ever see.
  T& WithLabels(std::vector<std::string> label_values) {
    absl::StatusOr<T*> series = TryWithLabels(std::move(label_values));
    if (!series.ok()) {
      std::fprintf(stderr, "f2obo::metrics: %s\n", series.status().ToString().c_str());
      std::abort();
    }
    return **series;
  }

  // Drops the series for `label_values`, if any (see the lifetime contract
  // above).  Returns whether a series was dropped.
  bool Remove(std::vector<std::string> label_values) {
    for (std::string& v : label_values) v = SanitizeUtf8(v);
    absl::MutexLock lock(&mu_);
    return series_.erase(label_values) > 0;
  }

  // Drops every series (see the lifetime contract above).
  void Clear() {
    absl::MutexLock lock(&mu_);
    series_.clear();
  }

  size_t size() const {
    absl::ReaderMutexLock lock(&mu_);
    return series_.size();
  }

  const typename T::Config& config() const { return config_; }
  const char* type_name() const override { return T::kTypeName; }

  void Render(std::string* out) const override {
    absl::ReaderMutexLock lock(&mu_);
    if (series_.empty()) return;
    absl::StrAppend(out, "# HELP ", name(), " ", EscapeHelp(help()), "\n", "# TYPE ", name(), " ",
                    T::kTypeName, "\n");
    // std::map keeps series ordered by label values, so output is stable.
    for (const auto& [label_values, series] : series_) {
      series->AppendSamples(name(), label_names(), label_values, out);
    }
  }

 private:
  const typename T::Config config_;
  mutable absl::Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> series_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace f2obo::metrics

#endif  // F2OBO_SERVER_METRICS_FAMILY_H_
