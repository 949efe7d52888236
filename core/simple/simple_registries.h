// The simple bilevel class's families and algorithms, by name.  Adding an
// algorithm: its file (the algorithm and its SimpleAlgorithmEntry) plus one
// line in simple_algorithm_registry.cc; a family: its file plus one line in
// simple_family_registry.cc.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_REGISTRIES_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_REGISTRIES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/family_config.h"
#include "core/simple/simple_algorithm.h"
#include "core/simple/simple_family.h"

namespace f2obo {

// In registration order.
const std::vector<const SimpleAlgorithmEntry*>& SimpleAlgorithms();
// nullptr if `name` is not a simple bilevel algorithm.
const SimpleAlgorithmEntry* FindSimpleAlgorithm(absl::string_view name);

std::vector<std::string> SimpleFamilyNameList();
// INVALID_ARGUMENT "family.<field>: ..." for bad dimensions.
absl::StatusOr<std::unique_ptr<SimpleFamily>> CreateSimpleFamily(const FamilyConfig& config);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_REGISTRIES_H_
