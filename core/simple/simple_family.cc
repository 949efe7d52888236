// SimpleFamily's checks of a step's batches (core/simple/simple_family.h).
#include "core/simple/simple_family.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace f2obo {

absl::Status SimpleFamily::ValidateStepBatch(const Batch& b, BatchRole role, double x_bound) const {
  if (absl::Status s = ValidateBatch(b, role); !s.ok()) return s;
  if (!std::isfinite(x_bound)) return absl::OkStatus();
  for (int i = 0; i < b.rows(); ++i) {
    const double bound = RowGradientBound(b, i, x_bound);
    if (!(bound <= kMaxRowGradient)) return RowBoundError(role, i, bound, x_bound);
  }
  return absl::OkStatus();
}

absl::Status SimpleFamily::RowBoundError(BatchRole role, int i, double bound,
                                         double x_bound) const {
  return absl::InvalidArgumentError(
      absl::StrCat(role == BatchRole::kUpper ? "upper" : "inner", " row ", i,
                   ": its gradient (or residual) in ", std::string(name()), " can reach ", bound,
                   " at points of Z (|x_j| <= ", x_bound, "), beyond ", kMaxRowGradient,
                   "; refused so that no later round can overflow while the row is kept (windows, "
                   "variance-reduced estimates): scale its features and target down"));
}

}  // namespace f2obo
