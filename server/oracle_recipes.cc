#include "server/oracle_recipes.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace f2obo::server {

void ApplyRecipeTerm(absl::Span<double> r, double coef, absl::Span<const double> a) {
  for (size_t i = 0; i < r.size(); ++i) r[i] = r[i] + coef * a[i];
}

std::optional<double> FindRecipe(absl::Span<const double> base, absl::Span<const double> a,
                                 absl::Span<const double> v, std::vector<double>* out) {
  const size_t n = v.size();
  if (base.size() != n || a.size() != n || n == 0) return std::nullopt;
  // The coefficient from the entry where a is largest: there the rounding
  // of v - base weighs least (relative error ~ ulp(v) / |c a_max|).
  size_t at = 0;
  double a_max = 0.0, v_max = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (std::abs(a[i]) > a_max) {
      a_max = std::abs(a[i]);
      at = i;
    }
    v_max = std::max(v_max, std::abs(v[i]));
  }
  if (a_max == 0.0 || !std::isfinite(a_max)) return std::nullopt;
  const double c = (v[at] - base[at]) / a[at];
  if (!std::isfinite(c) || c == 0.0) return std::nullopt;
  const double tol = kRecipeTolerance * std::max(v_max, 1e-300);
  // A few entries first: a point that is no such combination fails there
  // without a pass over all of them.
  for (size_t i = 0; i < n; i += std::max<size_t>(1, n / 16)) {
    if (std::abs((base[i] + c * a[i]) - v[i]) > tol) return std::nullopt;
  }
  out->assign(base.begin(), base.end());
  ApplyRecipeTerm(absl::MakeSpan(*out), c, a);
  for (size_t i = 0; i < n; ++i) {
    if (!(std::abs((*out)[i] - v[i]) <= tol)) return std::nullopt;
  }
  return c;
}

}  // namespace f2obo::server
