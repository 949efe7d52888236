// Conjugate gradient on a symmetric positive definite operator given as a
// function (an HVP), for the metrics' Newton and hypergradient systems.
#ifndef F2OBO_CORE_METRICS_LINEAR_SOLVE_H_
#define F2OBO_CORE_METRICS_LINEAR_SOLVE_H_

#include <cmath>
#include <functional>

#include "core/types.h"

namespace f2obo {

using LinearOperator = std::function<void(const Vector& v, Vector* out)>;

// Solves A w = b from w = 0 until ||A w - b|| <= rel_tol ||b|| or max_it
// iterations; returns the iterations used.  `w` is resized to b's size.
int ConjugateGradient(const LinearOperator& apply, const Vector& b, double rel_tol,
                      int max_it, Vector* w);

}  // namespace f2obo

#endif  // F2OBO_CORE_METRICS_LINEAR_SOLVE_H_
