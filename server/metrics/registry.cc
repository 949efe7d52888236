#include "server/metrics/registry.h"

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {
namespace {

// Suffixes the text format gives meaning to; promtool rejects them on a
// family of the wrong type, and they would make sample names ambiguous.
constexpr absl::string_view kHistogramSuffixes[] = {"_bucket", "_sum", "_count"};

absl::Status CheckTypeSuffix(absl::string_view name, absl::string_view type) {
  const bool is_counter = type == Counter::kTypeName;
  if (is_counter != absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        is_counter ? absl::StrCat("counter name \"", name, "\" must end in \"_total\"")
                   : absl::StrCat(type, " name \"", name, "\" must not end in \"_total\""));
  }
  if (type != Histogram::kTypeName) {
    for (absl::string_view suffix : kHistogramSuffixes) {
      if (absl::EndsWith(name, suffix)) {
        return absl::InvalidArgumentError(absl::StrCat(type, " name \"", name,
                                                       "\" must not end in \"", suffix,
                                                       "\" (reserved for histograms)"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CheckLabelNames(absl::string_view name, const std::vector<std::string>& label_names) {
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& label : label_names) {
    if (absl::Status s = ValidateLabelName(label); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("metric \"", name, "\": ", s.message()));
    }
    // "le" is the bucket label the histogram adds itself and "quantile" a
    // summary's; promtool rejects either as an ordinary label.
    if (label == "le" || label == "quantile") {
      return absl::InvalidArgumentError(
          absl::StrCat("metric \"", name, "\": label name \"", label, "\" is reserved"));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metric \"", name, "\": duplicate label name \"", label, "\""));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> SampleNames(const std::string& name, absl::string_view type) {
  std::vector<std::string> names = {name};
  if (type == Histogram::kTypeName) {
    for (absl::string_view suffix : kHistogramSuffixes) {
      names.push_back(absl::StrCat(name, suffix));
    }
  }
  return names;
}

}  // namespace

template <typename T>
absl::StatusOr<Family<T>*> Registry::Add(const std::string& name, const std::string& help,
                                         const std::vector<std::string>& label_names,
                                         typename T::Config config) {
  if (absl::Status s = ValidateMetricName(name); !s.ok()) return s;
  if (absl::Status s = CheckTypeSuffix(name, T::kTypeName); !s.ok()) return s;
  if (absl::Status s = CheckLabelNames(name, label_names); !s.ok()) return s;
  if (help.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("metric \"", name, "\": help text must not be empty"));
  }
  const std::vector<std::string> samples = SampleNames(name, T::kTypeName);

  absl::MutexLock lock(&mu_);
  for (const std::string& sample : samples) {
    if (sample_names_.contains(sample)) {
      return absl::AlreadyExistsError(
          sample == name ? absl::StrCat("metric \"", name, "\" is already registered")
                         : absl::StrCat("metric \"", name, "\" would emit \"", sample,
                                        "\", which an existing family already uses"));
    }
  }
  sample_names_.insert(samples.begin(), samples.end());
  auto family =
      std::make_unique<Family<T>>(name, SanitizeUtf8(help), label_names, std::move(config));
  Family<T>* result = family.get();
  families_.push_back(std::move(family));
  return result;
}

absl::StatusOr<CounterFamily*> Registry::AddCounter(const std::string& name,
                                                    const std::string& help,
                                                    const std::vector<std::string>& label_names) {
  return Add<Counter>(name, help, label_names, Counter::Config{});
}

absl::StatusOr<GaugeFamily*> Registry::AddGauge(const std::string& name, const std::string& help,
                                                const std::vector<std::string>& label_names) {
  return Add<Gauge>(name, help, label_names, Gauge::Config{});
}

absl::StatusOr<HistogramFamily*> Registry::AddHistogram(const std::string& name,
                                                        const std::string& help,
                                                        const std::vector<std::string>& label_names,
                                                        std::vector<double> bucket_bounds) {
  if (!bucket_bounds.empty() && std::isinf(bucket_bounds.back()) && bucket_bounds.back() > 0) {
    bucket_bounds.pop_back();
  }
  for (size_t i = 0; i < bucket_bounds.size(); ++i) {
    if (!std::isfinite(bucket_bounds[i])) {
      return absl::InvalidArgumentError(absl::StrCat("histogram \"", name, "\": bucket bound ",
                                                     FormatValue(bucket_bounds[i]),
                                                     " is not finite"));
    }
    if (i > 0 && !(bucket_bounds[i - 1] < bucket_bounds[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram \"", name, "\": bucket bounds must be strictly increasing, got ",
                       FormatValue(bucket_bounds[i - 1]), " then ", FormatValue(bucket_bounds[i])));
    }
  }
  return Add<Histogram>(name, help, label_names, Histogram::Config{std::move(bucket_bounds)});
}

std::string Registry::Render() const {
  std::string out;
  absl::ReaderMutexLock lock(&mu_);
  for (const std::unique_ptr<FamilyBase>& family : families_) family->Render(&out);
  return out;
}

}  // namespace f2obo::metrics
