// A multi-task family: m lower-level problems sharing the upper variable x
// (SPEC section 9.3),
//   F(x) = (1/m) sum_i f_i(x, y_i*(x)),  y_i*(x) = argmin_y g_i(x, y),
// every task with a y_i of the same size.  Task i's pair (f_i, g_i) is a
// BilevelFamily (core/bilevel/bilevel_family.h) evaluated on task i's own batches: the
// multi-task families wrap the bilevel ones, and every bilevel oracle
// (gradients, HVPs, exact metrics) serves a task unchanged.
//
// Contract: Task() is O(1) in m (no per-task storage is created for tasks
// never asked for); the BilevelFamily it returns is valid until the next Task()
// call and obeys core/bilevel/bilevel_family.h's contract.  Not thread-safe (one per
// session, one per metrics worker).
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_FAMILY_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_FAMILY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/bilevel/bilevel_family.h"
#include "core/constraint.h"
#include "core/family_config.h"
#include "core/types.h"

namespace f2obo {

// The most tasks a multi-task family accepts (FamilyConfig::tasks): task
// indices travel as doubles in the state (exact far beyond this).  Servers
// set a lower limit of their own (10,000 by default).
inline constexpr int kMaxTasks = 1000000;

class MultitaskFamily {
 public:
  virtual ~MultitaskFamily() = default;

  virtual std::string_view name() const = 0;
  virtual int tasks() const = 0;  // m
  virtual int x_dim() const = 0;
  virtual int y_dim() const = 0;  // of every y_i
  virtual bool is_classification() const = 0;
  // Whether its tasks answer HVPs (BilevelFamily::has_hvp): false for
  // "multitask_oracle", whose client answers values and first derivatives.
  virtual bool has_hvp() const { return true; }
  // OK unless an evaluation of this step failed (BilevelFamily::RoundFailure; the
  // tasks of a step share its oracle and its failure).
  virtual absl::Status RoundFailure() const { return absl::OkStatus(); }

  // Rejects a batch task `task` cannot use; the message names the field.
  virtual absl::Status ValidateBatch(int task, const Batch& batch, BatchRole role) const = 0;
  // Rejects constraint sets on which some g_i is not strongly convex in y.
  virtual absl::Status ValidateConstraint(const ConstraintSet& set) const = 0;
  // The start x_1 of a session that gives no initial point (before the
  // projection onto X).
  virtual void DefaultX(Vector* x) const = 0;

  // Task `task`'s oracle (f_i, g_i), prepared for `data` (its batches,
  // already accepted by ValidateBatch).
  virtual BilevelFamily& Task(int task, const StepData& data) = 0;
};

// Builds the multi-task family `config.name` with m = config.tasks;
// INVALID_ARGUMENT naming the field ("family.tasks: ...") otherwise.
absl::StatusOr<std::unique_ptr<MultitaskFamily>> CreateMultitaskFamily(const FamilyConfig& config);
// Registered names, in registration order.
std::vector<std::string> MultitaskFamilyNames();

// multitask_logistic_hpo's temperature of task i: 1 + (max_temperature - 1)
// u_i, u_i in [0, 1) a fixed hash of i (splitmix64), so sigma_i is "drawn
// once and fixed" (the paper's App. E.2 draws it from [1, 11]) without
// storing m numbers.  Exactly 1 when max_temperature is 1.
double TaskTemperature(int task, double max_temperature);

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_FAMILY_H_
