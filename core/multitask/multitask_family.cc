// The multi-task families: a bilevel family (core/bilevel/bilevel_family_registry.cc) per
// task, on the task's own batches.
//  * multitask_quadratic: every task is `quadratic` (its M_i, c_i, d_i come
//    with the task's batches), so y_i*(x) = M_i x + c_i and, with
//    least-squares f, grad F(x) = (1/m) sum_i M_i^T (M_i x + c_i - d_i) in
//    closed form (the tests' reference).
//  * multitask_logistic_hpo: every task is `logistic_hpo` (shared
//    per-feature L2 coefficients x, each task its own classifier y_i and
//    rows) with the loss temperature sigma_i of TaskTemperature
//    (core/multitask/tempered_family.h), the paper's App. E.2 experiment.
//  * multitask_oracle: every task is `oracle` (core/bilevel/families/
//    oracle_family.h): f_i and g_i are the client's, its queries name the
//    task; x_dim and y_dim from the spec.
// One bilevel family instance serves every task (the data differ, not the
// functions), or one per temperature in use: nothing is stored per task.
#include "core/multitask/multitask_family.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/multitask/tempered_family.h"

namespace f2obo {
namespace {

constexpr double kMaxTemperature = 1000.0;

// Every task is the bilevel family `base_` on its own batches.
class SharedFamilyTasks : public MultitaskFamily {
 public:
  SharedFamilyTasks(std::string name, int tasks, std::unique_ptr<BilevelFamily> base)
      : name_(std::move(name)), tasks_(tasks), base_(std::move(base)) {}

  std::string_view name() const override { return name_; }
  int tasks() const override { return tasks_; }
  int x_dim() const override { return base_->x_dim(); }
  int y_dim() const override { return base_->y_dim(); }
  bool is_classification() const override { return base_->is_classification(); }
  bool has_hvp() const override { return base_->has_hvp(); }
  absl::Status RoundFailure() const override { return base_->RoundFailure(); }
  absl::Status ValidateBatch(int /*task*/, const Batch& batch, BatchRole role) const override {
    return base_->ValidateBatch(batch, role);
  }
  absl::Status ValidateConstraint(const ConstraintSet& set) const override {
    return base_->ValidateConstraint(set);
  }
  void DefaultX(Vector* x) const override { base_->DefaultX(x); }
  BilevelFamily& Task(int /*task*/, const StepData& data) override {
    base_->Prepare(data);
    return *base_;
  }

 protected:
  BilevelFamily& base() { return *base_; }

 private:
  std::string name_;
  int tasks_;
  std::unique_ptr<BilevelFamily> base_;
};

// logistic_hpo with task i's temperature sigma_i: the untempered family
// for sigma_i = 1, else a TemperedFamily.  A step's tasks each have their
// own temperature, so the families of the last few temperatures are kept
// (up to kCachedTemperatures, least recently used replaced; one for big
// models, whose dense buffers reach megabytes): rebuilding one per switch
// was ~7% of a 4-task small round, in malloc and free.
// Which instance serves a task does not change a bit of its results: each
// is prepared for the step's data before use, and none keeps values
// between calls.
class TemperedLogisticTasks final : public SharedFamilyTasks {
 public:
  TemperedLogisticTasks(const FamilyConfig& base_config, int tasks, double max_temperature,
                        std::unique_ptr<BilevelFamily> base)
      : SharedFamilyTasks("multitask_logistic_hpo", tasks, std::move(base)),
        base_config_(base_config),
        max_temperature_(max_temperature),
        capacity_(static_cast<int64_t>(base_config.features) * base_config.classes <= 16384
                      ? kCachedTemperatures
                      : 1) {}

  BilevelFamily& Task(int task, const StepData& data) override {
    const double sigma = TaskTemperature(task, max_temperature_);
    if (sigma == 1.0) return SharedFamilyTasks::Task(task, data);
    size_t k = 0;
    while (k < tempered_.size() && tempered_[k]->sigma() != sigma) ++k;
    if (k == tempered_.size()) {
      FamilyConfig c = base_config_;
      c.mu0 = base_config_.mu0 * sigma * sigma;
      // Create only fails on the config, which the untempered family
      // accepted (mu0 sigma^2 is as valid as mu0).
      auto family = std::make_unique<TemperedFamily>(*CreateBilevelFamily(c), sigma);
      if (static_cast<int>(tempered_.size()) >= capacity_) tempered_.erase(tempered_.begin());
      tempered_.push_back(std::move(family));
      k = tempered_.size() - 1;
    }
    // Most recently used last.
    std::rotate(tempered_.begin() + static_cast<std::ptrdiff_t>(k),
                tempered_.begin() + static_cast<std::ptrdiff_t>(k) + 1, tempered_.end());
    TemperedFamily& f = *tempered_.back();
    f.Prepare(data);
    return f;
  }

 private:
  static constexpr int kCachedTemperatures = 8;
  FamilyConfig base_config_;
  double max_temperature_;
  int capacity_;
  std::vector<std::unique_ptr<TemperedFamily>> tempered_;
};

struct Entry {
  const char* name;
  const char* base;  // the bilevel family of every task
};

constexpr Entry kFamilies[] = {
    {"multitask_quadratic", "quadratic"},
    {"multitask_logistic_hpo", "logistic_hpo"},
    {"multitask_oracle", "oracle"},
};

uint64_t SplitMix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double TaskTemperature(int task, double max_temperature) {
  const double u = static_cast<double>(SplitMix64(static_cast<uint64_t>(task)) >> 11) * 0x1p-53;
  return 1.0 + (max_temperature - 1.0) * u;
}

absl::StatusOr<std::unique_ptr<MultitaskFamily>> CreateMultitaskFamily(const FamilyConfig& config) {
  const Entry* entry = nullptr;
  for (const Entry& e : kFamilies) {
    if (config.name == e.name) entry = &e;
  }
  if (entry == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.name: unknown multi-task family '", config.name,
                     "'; known: ", absl::StrJoin(MultitaskFamilyNames(), ", ")));
  }
  if (config.tasks < 1 || config.tasks > kMaxTasks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "family.tasks: m = ", config.tasks, "; a multi-task family needs 1 <= m <= ", kMaxTasks));
  }
  FamilyConfig base_config = config;
  base_config.name = entry->base;
  absl::StatusOr<std::unique_ptr<BilevelFamily>> base = CreateBilevelFamily(base_config);
  if (!base.ok()) return base.status();
  if (std::string_view(entry->base) == "logistic_hpo") {
    if (!(config.max_temperature >= 1.0 && config.max_temperature <= kMaxTemperature)) {
      return absl::InvalidArgumentError(
          absl::StrCat("family.max_temperature: ", config.max_temperature, " must be in [1, ",
                       kMaxTemperature, "] (task temperatures are drawn in [1, max_temperature])"));
    }
    return std::unique_ptr<MultitaskFamily>(new TemperedLogisticTasks(
        base_config, config.tasks, config.max_temperature, *std::move(base)));
  }
  return std::unique_ptr<MultitaskFamily>(
      new SharedFamilyTasks(entry->name, config.tasks, *std::move(base)));
}

std::vector<std::string> MultitaskFamilyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kFamilies) names.emplace_back(e.name);
  return names;
}

}  // namespace f2obo
