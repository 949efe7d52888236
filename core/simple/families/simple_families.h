// The simple bilevel class's families (SPEC section 9.2), built by name in
// core/simple/simple_family_registry.cc, and the row kernels they share.
//
//   least_squares   f = (1/2m) ||A_u x - b_u||^2, g = (1/2n) ||A_i x - b_i||^2
//   logistic        f, g = mean softmax cross-entropy of x = W (d x C)
//   linear_inverse  f = (1/2) ||x||^2, g = (1/2k) ||B x - c||^2
//   simple_oracle   f, g the client's (oracle.cc)
//
// Each factory checks the FamilyConfig fields it reads (INVALID_ARGUMENT
// "family.<field>: ...").
#ifndef F2OBO_CORE_SIMPLE_FAMILIES_SIMPLE_FAMILIES_H_
#define F2OBO_CORE_SIMPLE_FAMILIES_SIMPLE_FAMILIES_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/family_config.h"
#include "core/simple/simple_family.h"
#include "core/types.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLeastSquaresFamily(const FamilyConfig& config);
absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLogisticFamily(const FamilyConfig& config);
absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateLinearInverseFamily(const FamilyConfig& config);
absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateSimpleOracleFamily(const FamilyConfig& config);

// (1/2n) sum_{i in view} (a_i^T x - t_i)^2 over the view's n rows (0 when
// empty) and, if non-null, its gradient (1/n) sum (a_i^T x - t_i) a_i
// (resized to x.size()).  No allocation once grad is sized.
double HalfMeanSquaredResidual(const VecIn& x, const BatchView& view, Vector* grad);
// SimpleFamily::StormPass for a half mean squared residual (the same f or g
// as HalfMeanSquaredResidual on in.view) in one walk over the rows: each
// row's features are read once for its margins at x, prev and at
// (RowDots: each summed as RowDot, so the values and the k = 0 estimate
// are bit-equal to HalfMeanSquaredResidual's) and once to scatter
//   (1/n) [(a_i^T x - t_i) - keep (a_i^T prev - t_i)] a_i
// into *estimate, which starts at keep * before (or 0 without prev).
// This is Alg. 1's order, (1 - a) d + grad(x) - (1 - a) grad(prev) with
// the two gradients combined per row, instead of forming both gradients
// and then d + (1 - a)(d - grad(prev)) entry by entry (one
// scatter and no zeroed scratch vectors instead of two of each): the same
// sum, rounded differently (see ir_scg.cc).
// On CSR rows with `scratch` (the caller's, reused: no allocation once
// sized) the walk goes by column tiles, with the same numbers.
struct StormScratch {
  std::vector<int> cursor;
  std::vector<double> sums;
};
StormPassOut StormSquaredResidual(const StormPassIn& in, Vector* estimate,
                                  StormScratch* scratch = nullptr);
// ||A||_F^2 / n over the view's rows (0 when empty): an upper bound on
// lambda_max((1/n) A^T A), the Hessian of HalfMeanSquaredResidual.
double MeanRowSquaredNorm(const BatchView& view);
// max_j |v_j| and sum_j |v_j| of n numbers, in one read of them (the sum
// in a fixed order of 32 lanes, rows.cc); a NaN among them makes *max a
// NaN (so `*max <= bound` is false), an infinity +inf.
void AbsMaxSum(const double* v, int n, double* max, double* sum);
// AbsMaxSum of row i's features (its stored entries for CSR rows).
void RowAbsMaxSum(const Batch& b, int i, double* max, double* sum);
// RowGradientBound of a half squared residual (a_i^T x - t_i)^2 / 2: its
// residual is at most ||a_i||_1 x_bound + |t_i| and its gradient
// max_j |a_ij| times that; max(1, max_j |a_ij|) times it bounds both.
double SquaredResidualRowBound(const Batch& b, int i, double x_bound);

// lambda_max((1/n) A^T A) over the view's rows (0 when empty), the exact
// smoothness constant of HalfMeanSquaredResidual, by power iteration on
// v -> (1/n) A^T (A v), one pass over the rows each: from the deterministic
// start v_j = 1/sqrt(j + 1) (normalized; not orthogonal to the top
// eigenvector of nonnegative data, and no symmetric pattern of rows
// annihilates it), until the Rayleigh quotient changes by at most
// kPowerTolerance relative, at most kPowerIterations times.  The quotient
// rises to lambda_max from below, so it is scaled by kPowerSafety
// (covering the stopping error unless the top two eigenvalues are within
// 1e-4 of each other, where it is ~1e-6 / gap) and capped at the Frobenius
// bound ||A||_F^2 / n, which it thus never exceeds (AGM-BiO's
// gaps were 6-50x larger with the Frobenius bound, loose by up to the
// rank).  `v`, `w`: scratch of x's size (no allocation once sized).
inline constexpr int kPowerIterations = 100;
inline constexpr double kPowerTolerance = 1e-6;
inline constexpr double kPowerSafety = 1.01;
// Up to this many columns (and at most twice the rows) the iteration runs
// on the d x d Gram matrix, formed once per call on the stack.
inline constexpr int kGramColumns = 32;
double MeanGramSpectralNorm(const BatchView& view, int cols, Vector* v, Vector* w);

// Dense copies of the views' rows restricted to the columns any of them
// uses (a column no row touches changes neither f nor g, so the outer
// problems of least_squares and linear_inverse decouple there: its optimal
// entry is 0).  `columns` lists the kept columns in increasing order.
// nullopt if the dense matrices would hold more than kMaxDenseEntries
// numbers together (the outer solves are O(rows^2 columns) and off the
// request path, but must stay bounded).
inline constexpr int64_t kMaxDenseEntries = int64_t{1} << 22;
struct DenseRows {
  std::vector<int> columns;
  std::vector<Matrix> a;  // one per view: rows x columns.size()
  std::vector<Vector> t;  // the views' targets
};
std::optional<DenseRows> GatherDenseRows(const std::vector<BatchView>& views, int cols);
// The full x (cols entries) of a solution on the kept columns.
Vector Scatter(const DenseRows& rows, const Vector& reduced, int cols);

// Rank decisions of the outer solves: a pivot below kRankTolerance times the
// reference (the largest pivot, or the absolute scale given) counts as 0.
inline constexpr double kRankTolerance = 1e-11;
// The minimum-norm least-squares solution of a x = b (complete orthogonal
// decomposition), pivots below kRankTolerance times the largest dropped.
Vector MinNormSolve(const Matrix& a, const Vector& b);
// The same with pivots below `abs_tol` dropped (all of a when its largest
// column is below abs_tol: the solution is then 0).
Vector MinNormSolveAbsolute(const Matrix& a, const Vector& b, double abs_tol);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_FAMILIES_SIMPLE_FAMILIES_H_
