#include "core/bilevel/bilevel_algorithm_registry.h"

#include "absl/strings/str_cat.h"
#include "core/bilevel/algorithms/af2obo.h"
#include "core/bilevel/algorithms/aobo.h"
#include "core/bilevel/algorithms/f2obo.h"
#include "core/bilevel/algorithms/fsobo.h"
#include "core/bilevel/algorithms/obbo.h"
#include "core/bilevel/algorithms/pzobo.h"
#include "core/bilevel/algorithms/sf2obo.h"
#include "core/bilevel/algorithms/sobbo.h"
#include "core/bilevel/algorithms/sobow.h"
#include "core/bilevel/algorithms/sogd.h"
#include "core/bilevel/algorithms/svrb.h"

namespace f2obo {

const std::vector<const BilevelAlgorithmEntry*>& BilevelAlgorithms() {
  static const auto* entries = new std::vector<const BilevelAlgorithmEntry*>{
      &F2oboAlgorithm(),  &F2oboSlAlgorithm(), &Af2oboAlgorithm(), &Sf2oboAlgorithm(),
      &ObboAlgorithm(),   &SobowAlgorithm(),   &AoboAlgorithm(),   &FsoboAlgorithm(),
      &SobboAlgorithm(),  &SogdAlgorithm(),    &SvrbAlgorithm(),   &PzoboAlgorithm(),
      &PzoboSAlgorithm(),
  };
  return *entries;
}

const BilevelAlgorithmEntry* FindBilevelAlgorithm(absl::string_view name) {
  for (const BilevelAlgorithmEntry* e : BilevelAlgorithms()) {
    if (name == e->info.name) return e;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> CreateBilevelAlgorithm(
    const BilevelAlgorithmContext& ctx) {
  const BilevelAlgorithmEntry* e = FindBilevelAlgorithm(ctx.name);
  if (e == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("algorithm: '", ctx.name, "' is not a bilevel algorithm"));
  }
  if (absl::Status s = ValidateAlgorithmOptions(e->info, ctx.options); !s.ok()) return s;
  return e->create(ctx);
}

}  // namespace f2obo
