// The simple bilevel class's families by name (core/simple/simple_registries.h).
// Adding a family: its file under core/simple/families/ plus one line here.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/simple/families/simple_families.h"
#include "core/simple/simple_registries.h"

namespace f2obo {
namespace {

struct SimpleFamilyEntry {
  const char* name;
  absl::StatusOr<std::unique_ptr<SimpleFamily>> (*create)(const FamilyConfig&);
};

constexpr SimpleFamilyEntry kSimpleFamilies[] = {
    {"least_squares", &CreateLeastSquaresFamily},
    {"logistic", &CreateLogisticFamily},
    {"linear_inverse", &CreateLinearInverseFamily},
    {"simple_oracle", &CreateSimpleOracleFamily},
};

}  // namespace

std::vector<std::string> SimpleFamilyNameList() {
  std::vector<std::string> names;
  for (const SimpleFamilyEntry& e : kSimpleFamilies) names.emplace_back(e.name);
  return names;
}

absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateSimpleFamily(const FamilyConfig& config) {
  for (const SimpleFamilyEntry& e : kSimpleFamilies) {
    if (config.name == e.name) return e.create(config);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("family.name: unknown simple bilevel family '", config.name,
                   "'; known: ", absl::StrJoin(SimpleFamilyNameList(), ", ")));
}

}  // namespace f2obo
