// The upper-level feasible set X and its Euclidean projection P_X.
#ifndef F2OBO_CORE_CONSTRAINT_H_
#define F2OBO_CORE_CONSTRAINT_H_

#include "absl/status/status.h"
#include "core/types.h"

namespace f2obo {

struct ConstraintSet {
  enum class Kind { kNone, kBox, kBall };
  Kind kind = Kind::kNone;
  // Box: lo <= x <= hi coordinate-wise.  Size 1 means a scalar bound for
  // every coordinate; otherwise the size must equal x_dim.
  Vector lo;
  Vector hi;
  // Ball: ||x - center||_2 <= radius; empty center means the origin.
  double radius = 0.0;
  Vector center;

  static ConstraintSet None() { return {}; }
  static ConstraintSet Box(double lo, double hi);
  static ConstraintSet Ball(double radius);

  // Checks shapes against x_dim, lo <= hi, radius > 0, finiteness.
  absl::Status Validate(int x_dim) const;
  // Lower bound of coordinate i (-inf without a box).
  double LowerBound(int i) const;
  // In-place Euclidean projection onto X (no allocation).
  void Project(Vector* x) const;
  bool Contains(const VecIn& x, double tol = 0.0) const;
};

// Gradient mapping G_X(x, g, gamma) = (x - P_X(x - gamma g)) / gamma,
// paper Eq. (3).  `out` is caller-owned, sized x_dim.
void GradientMapping(const ConstraintSet& set, const VecIn& x, const VecIn& g,
                     double gamma, Vector* out);

}  // namespace f2obo

#endif  // F2OBO_CORE_CONSTRAINT_H_
