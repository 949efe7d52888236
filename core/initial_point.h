// The initial point of a session from its config, the same for every
// problem class: a given vector is checked (size, finite, inside the set),
// an absent one defaults to the family's start projected onto the set.
#ifndef F2OBO_CORE_INITIAL_POINT_H_
#define F2OBO_CORE_INITIAL_POINT_H_

#include "absl/status/status.h"
#include "core/constraint.h"
#include "core/types.h"

namespace f2obo {

// INVALID_ARGUMENT "<field>: has n entries, expected dim" or "<field>: not
// finite".
absl::Status CheckVector(const Vector& v, int dim, const char* field);

// x_1: `x0` if non-empty (checked against `dim` and `set`, whose name in
// the error is `set_name`, e.g. "X" or "Z"), else `fallback` projected
// onto `set`.
absl::Status InitialX(const Vector& x0, int dim, const ConstraintSet& set, const char* set_name,
                      Vector fallback, Vector* x);

}  // namespace f2obo

#endif  // F2OBO_CORE_INITIAL_POINT_H_
