#include "core/initial_point.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo {

absl::Status CheckVector(const Vector& v, int dim, const char* field) {
  if (v.size() != dim) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": has ", v.size(), " entries, expected ", dim));
  }
  if (!v.allFinite()) return absl::InvalidArgumentError(absl::StrCat(field, ": not finite"));
  return absl::OkStatus();
}

absl::Status InitialX(const Vector& x0, int dim, const ConstraintSet& set, const char* set_name,
                      Vector fallback, Vector* x) {
  if (x0.size() == 0) {
    *x = std::move(fallback);
    set.Project(x);
    return absl::OkStatus();
  }
  if (absl::Status st = CheckVector(x0, dim, "initial.x"); !st.ok()) return st;
  if (!set.Contains(x0, 1e-12)) {
    return absl::InvalidArgumentError(
        absl::StrCat("initial.x: outside the constraint set ", set_name));
  }
  *x = x0;
  return absl::OkStatus();
}

}  // namespace f2obo
