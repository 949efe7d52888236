// The bilevel class's families by name.  Adding a family = one file plus
// one line in bilevel_family_registry.cc.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_FAMILY_REGISTRY_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_FAMILY_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/bilevel/bilevel_family.h"

namespace f2obo {

// Builds the family `config.name`; INVALID_ARGUMENT naming the field for an
// unknown name or bad dimensions.
absl::StatusOr<std::unique_ptr<BilevelFamily>> CreateBilevelFamily(const FamilyConfig& config);

// Registered names, in registration order.
std::vector<std::string> BilevelFamilyNameList();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_FAMILY_REGISTRY_H_
