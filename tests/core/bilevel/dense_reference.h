// An independent reference for the exact metrics on small problems: the
// inner problem by Newton on the explicit Hessian (built column by column
// from HVPs, solved by LDLT) with an exact line search on g, and the true
// hypergradient from the explicit Hessian and cross-derivative blocks.
// It shares nothing with core/metrics/ but the family's oracle.
#ifndef F2OBO_TESTS_CORE_BILEVEL_DENSE_REFERENCE_H_
#define F2OBO_TESTS_CORE_BILEVEL_DENSE_REFERENCE_H_

#include "core/bilevel/bilevel_family.h"
#include "core/constraint.h"

namespace f2obo::testing {

struct DenseSolution {
  Vector y;               // y*(x)
  double residual = 0.0;  // ||grad_y g(x, y)|| reached
  int iterations = 0;
  Vector grad;         // grad F(x) = grad_x f - grad2_xy g H^{-1} grad_y f
  double value = 0.0;  // F(x) = f(x, y*(x))
};

// Newton from `start` until ||grad_y g|| <= tolerance (or 200 iterations);
// family.Prepare(data) must have been called.
DenseSolution DenseSolve(BilevelFamily& family, const VecIn& x, const StepData& data,
                         const VecIn& start, double tolerance = 1e-12);

// The explicit matrices: grad2_yy g (y_dim x y_dim) and grad2_xy g
// (x_dim x y_dim) at (x, y) on the inner batch.
Matrix ExplicitHessianYY(BilevelFamily& family, const VecIn& x, const VecIn& y,
                         const BatchView& inner);
Matrix ExplicitCrossXY(BilevelFamily& family, const VecIn& x, const VecIn& y,
                       const BatchView& inner);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_BILEVEL_DENSE_REFERENCE_H_
