// Guaranteed upper bounds on the largest eigenvalue of a batch's weighted
// Gram matrix, the data part of the Hessians of the sample-based families:
//   M = sum_i w_i a~_i a~_i^T      (w_i >= 0; a~_i = a_i, or (a_i, 1) when
//                                    `augmented`, for models with biases)
// over the rows of a view.  Used by the families' EstimateSmoothness for
// "auto" step sizes (SmoothnessSource::kBatchBound).
//
// When the view has at most kSmallGram rows or columns (dense or CSR), the
// bound is tr(S^8)^(1/8) for the smaller S of M (cols x cols) and the rows'
// Gram W^1/2 A~ A~^T W^1/2 (rows x rows, same non-zero spectrum): at least
// lambda_max, exact for one row, and within rank^(1/8) <= 1.42 of it; two
// products of a matrix on fixed-size storage (no heap), times (1 + 1e-10)
// for rounding.  Otherwise it is trace(M) = sum_i w_i ||a~_i||^2, one read
// of the rows: never below lambda_max, and as tight as the rows are aligned
// (loose by up to the rank for isotropic rows).  Costs: min(rows, cols)^2
// max(rows, cols) for the small case, rows x cols otherwise, against rounds
// of tens of passes over the rows.
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_GRAM_BOUND_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_GRAM_BOUND_H_

#include "core/batch.h"

namespace f2obo {

inline constexpr int kSmallGram = 16;

// `weights` has view.rows.n entries (w_k for the view's k-th row), or is
// null for w = 1.
double GramBound(const BatchView& view, const double* weights, bool augmented);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_GRAM_BOUND_H_
