#include "server/oracle_recipes.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace f2obo::server {

void ApplyRecipeTerm(absl::Span<double> r, double coef, absl::Span<const double> a) {
  for (size_t i = 0; i < r.size(); ++i) r[i] = r[i] + coef * a[i];
}

double MaxAbs(absl::Span<const double> v) {
  // On the bits: a double's magnitude orders as its bits without the sign
  // (a NaN above inf), and an integer max vectorizes where a floating
  // one, NaN-aware, does not.
  uint64_t m = 0;
  for (const double x : v) {
    uint64_t bits;
    std::memcpy(&bits, &x, sizeof(bits));
    m = std::max(m, bits & ~(uint64_t{1} << 63));
  }
  double out;
  std::memcpy(&out, &m, sizeof(out));
  return out;
}

RecipeTerm LargestEntry(absl::Span<const double> a) {
  RecipeTerm term{a, 0, MaxAbs(a)};
  while (term.at < a.size() && !(std::abs(a[term.at]) == term.a_max)) ++term.at;
  if (term.at == a.size()) term = RecipeTerm{a, 0, 0.0};  // a NaN: no recipe
  return term;
}

std::optional<double> FindRecipe(absl::Span<const double> base, const RecipeTerm& term,
                                 absl::Span<const double> v, double v_max,
                                 std::vector<double>* out) {
  const absl::Span<const double> a = term.a;
  const size_t n = v.size();
  if (base.size() != n || a.size() != n || n == 0) return std::nullopt;
  // The coefficient from the entry where a is largest: there the rounding
  // of v - base weighs least (relative error ~ ulp(v) / |c a_max|).
  if (term.a_max == 0.0 || !std::isfinite(term.a_max)) return std::nullopt;
  const size_t at = term.at;
  const double c = (v[at] - base[at]) / a[at];
  if (!std::isfinite(c) || c == 0.0) return std::nullopt;
  const double tol = kRecipeTolerance * std::max(v_max, 1e-300);
  // A few entries first: a point that is no such combination fails there
  // without a pass over all of them.
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 16)) {
    if (std::abs((base[i] + c * a[i]) - v[i]) > tol) return std::nullopt;
  }
  // The result as the client computes it and its distance to v in one
  // pass (no early exit: the loop vectorizes; a NaN fails the test).
  out->resize(n);
  double* r = out->data();
  bool within = true;
  for (size_t i = 0; i < n; ++i) {
    r[i] = base[i] + c * a[i];
    within &= std::abs(r[i] - v[i]) <= tol;
  }
  if (!within) return std::nullopt;
  return c;
}

}  // namespace f2obo::server
