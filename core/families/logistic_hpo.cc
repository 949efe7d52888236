#include "core/families/logistic_hpo.h"
namespace f2obo {
absl::StatusOr<std::unique_ptr<Family>> LogisticHpoFamily::Create(const FamilyConfig&) {
  return absl::UnimplementedError("logistic_hpo: not yet");
}
}  // namespace f2obo
