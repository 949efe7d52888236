#include "core/families/loss_tuning.h"
namespace f2obo {
absl::StatusOr<std::unique_ptr<Family>> LossTuningFamily::Create(const FamilyConfig&) {
  return absl::UnimplementedError("loss_tuning: not yet");
}
}  // namespace f2obo
