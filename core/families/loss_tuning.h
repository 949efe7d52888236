// STUB: replaced by the real family.
#ifndef F2OBO_CORE_FAMILIES_LOSS_TUNING_H_
#define F2OBO_CORE_FAMILIES_LOSS_TUNING_H_
#include <memory>
#include "core/family.h"
namespace f2obo {
class LossTuningFamily {
 public:
  static absl::StatusOr<std::unique_ptr<Family>> Create(const FamilyConfig& config);
};
}  // namespace f2obo
#endif
