// Points by recipe (proto: OraclePointRecipe; docs/oracle-protocol.md): a
// client that opened its step with `recipes` holds the y-sized gradients it
// answered (OracleQuery.keep_y) and builds each new point the server asks
// at as base + sum coef_i * kept_i from vectors it already holds, instead
// of receiving y_dim doubles.  Every point an F2OBO round asks at is such
// a combination: z_{k+1} = z_k - alpha grad_y g(z_k), y_{k+1} = y_k -
// beta (grad_y f + lambda grad_y g)(y_k) (paper Algorithm 1, lines 5-6),
// the second a single term when the client answers the fused gradient.
//
// The arithmetic is fixed so that both sides compute the same bits: per
// term and entry, the product coef * a rounded to float64, then the sum
// (numpy's `r += coef * a`; this file is compiled without contraction into
// fused multiply-adds).  The server's own update may round differently
// (its build fuses); so the server finds the coefficient from the point
// its round asks at, computes the recipe's result as the client will, and
// uses the recipe only when that result is within kRecipeTolerance of the
// asked point (relative to its largest entry): the client then evaluates
// at a point a few ulps from the server's, and the server holds the
// client's exact values for the next recipe.
#ifndef F2OBO_SERVER_ORACLE_RECIPES_H_
#define F2OBO_SERVER_ORACLE_RECIPES_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace f2obo::server {

// A few hundred ulps of the largest entry: far above the rounding
// differences of a round's K + 1 recipes, far below the 1e-12 at which the
// trajectories are compared with the built-in twins.
inline constexpr double kRecipeTolerance = 1e-13;

// r += coef * a, entry by entry, in the recipe arithmetic above.
void ApplyRecipeTerm(absl::Span<double> r, double coef, absl::Span<const double> a);

// A term's vector and its largest entry in magnitude (where FindRecipe
// reads the coefficient): found once per vector, tried against several
// bases.
struct RecipeTerm {
  absl::Span<const double> a;
  size_t at = 0;
  double a_max = 0.0;
};
RecipeTerm LargestEntry(absl::Span<const double> a);

// The largest |v_i| (NaN if there is one; 0 for an empty v).
double MaxAbs(absl::Span<const double> v);

// The coefficient c with base + c * term.a equal to `v` within
// kRecipeTolerance * v_max (v_max: v's largest entry in magnitude; the
// result, as the client computes it, in *out, resized), or nullopt.  All
// three of one size.
std::optional<double> FindRecipe(absl::Span<const double> base, const RecipeTerm& term,
                                 absl::Span<const double> v, double v_max,
                                 std::vector<double>* out);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_ORACLE_RECIPES_H_
