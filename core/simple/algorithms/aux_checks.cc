#include "core/simple/algorithms/aux_checks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace f2obo {

absl::Status CheckAuxSize(const StateParts& aux, int i, int size, const char* what) {
  if (static_cast<int>(aux[i].size()) == size) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("aux[", i, "]: has ", aux[i].size(),
                                                 " entries, expected ", size, " (", what, ")"));
}

absl::Status CheckAuxCount(const StateParts& aux, int count, const char* algorithm) {
  const int n = static_cast<int>(aux.size());
  if (n == count) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("aux[", std::min(n, count), "]: ", n < count ? "missing" : "unexpected", "; ",
                   algorithm, " keeps ", count, " vectors and this state has ", n,
                   " (a state written by another algorithm?)"));
}

absl::Status CheckAuxCountAtLeast(const StateParts& aux, int count, const char* algorithm) {
  const int n = static_cast<int>(aux.size());
  if (n >= count) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("aux[", n, "]: missing; ", algorithm, " keeps at least ", count,
                   " vectors and this state has ", n, " (a state written by another algorithm?)"));
}

}  // namespace f2obo
