// Finite-difference checks shared by every family's tests.
//
// Each check compares an analytic derivative with a central difference of
// the next-lower-order quantity along random unit directions:
//   grad:  (v . grad h)      vs  (h(p + e v) - h(p - e v)) / 2e
//   HVP:   H v               vs  (grad(p + e v) - grad(p - e v)) / 2e
// and reports the relative error |fd - analytic| / max(|analytic|, scale),
// where for a directional derivative the scale is ||grad|| (v is a unit
// vector), so a direction nearly orthogonal to the gradient is not
// mistaken for a wrong gradient.
#ifndef F2OBO_TESTS_CORE_BILEVEL_FAMILIES_FAMILY_CHECKS_H_
#define F2OBO_TESTS_CORE_BILEVEL_FAMILIES_FAMILY_CHECKS_H_

#include <random>
#include <vector>

#include "core/bilevel/bilevel_family.h"

namespace f2obo::testing {

struct FdErrors {
  double grad_x_f = 0, grad_y_f = 0, grad_x_g = 0, grad_y_g = 0;
  double hvp_yy_g = 0, hvp_xy_g = 0, hvp_yy_f = 0;
  double pair = 0;  // GradYGPair vs two G calls (exact agreement expected)
  double Max() const;
};

// Runs every check at (x, y) over `directions` random directions and
// returns the worst relative error of each quantity.
FdErrors CheckFamilyDerivatives(BilevelFamily& family, const StepData& data, const Vector& x,
                                const Vector& y, std::mt19937_64& rng, int directions = 4);

Vector RandomVector(int n, std::mt19937_64& rng, double scale = 1.0);
RowMatrix RandomMatrix(int rows, int cols, std::mt19937_64& rng);
// Random CSR with about `density` of entries non-zero (at least one per row).
CsrMatrix RandomCsr(int rows, int cols, double density, std::mt19937_64& rng);
// A batch of the dense rows `rows` of `b` (in that order) with their labels.
Batch SubsetOf(const Batch& b, const std::vector<int>& rows);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_BILEVEL_FAMILIES_FAMILY_CHECKS_H_
