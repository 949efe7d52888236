// Families by name.  Adding a family = one file plus one line in
// family_registry.cc.
#ifndef F2OBO_CORE_FAMILY_REGISTRY_H_
#define F2OBO_CORE_FAMILY_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/constraint.h"
#include "core/family.h"

namespace f2obo {

// Builds the family `config.name`; INVALID_ARGUMENT naming the field for an
// unknown name or bad dimensions.
absl::StatusOr<std::unique_ptr<Family>> CreateFamily(const FamilyConfig& config);

// Registered names, in registration order.
std::vector<std::string> FamilyNames();

// The feasible set X (Z) of a session of `family` whose spec gives none:
// the one home of this default, applied by the server to every client's
// spec.  logistic_hpo: the box [0, 0.1]^d of the paper's Sec. 6.1 (its g
// needs lo > -mu0); ridge_hpo: [0, 1]^d (likewise); their multi-task
// versions the same; every other family (any class): unconstrained.
ConstraintSet DefaultConstraint(absl::string_view family);

}  // namespace f2obo

#endif  // F2OBO_CORE_FAMILY_REGISTRY_H_
