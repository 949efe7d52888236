#include "core/bilevel/bilevel_family_registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/bilevel/families/logistic_hpo.h"
#include "core/bilevel/families/loss_tuning.h"
#include "core/bilevel/families/oracle_family.h"
#include "core/bilevel/families/quadratic.h"
#include "core/bilevel/families/ridge_hpo.h"

namespace f2obo {
namespace {

struct Entry {
  const char* name;
  absl::StatusOr<std::unique_ptr<BilevelFamily>> (*create)(const FamilyConfig&);
};

constexpr Entry kFamilies[] = {
    {"quadratic", &QuadraticFamily::Create},      {"ridge_hpo", &RidgeHpoFamily::Create},
    {"logistic_hpo", &LogisticHpoFamily::Create}, {"loss_tuning", &LossTuningFamily::Create},
    {OracleFamily::kName, &OracleFamily::Create},
};

}  // namespace

absl::StatusOr<std::unique_ptr<BilevelFamily>> CreateBilevelFamily(const FamilyConfig& config) {
  for (const Entry& e : kFamilies) {
    if (config.name == e.name) return e.create(config);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("family.name: unknown family '", config.name,
                   "'; known: ", absl::StrJoin(BilevelFamilyNameList(), ", ")));
}

std::vector<std::string> BilevelFamilyNameList() {
  std::vector<std::string> names;
  for (const Entry& e : kFamilies) names.emplace_back(e.name);
  return names;
}

}  // namespace f2obo
