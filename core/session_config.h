// The immutable configuration of a session (what its spec says), whatever
// its problem class.
#ifndef F2OBO_CORE_SESSION_CONFIG_H_
#define F2OBO_CORE_SESSION_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/constraint.h"
#include "core/family_config.h"
#include "core/options.h"
#include "core/problem_class.h"
#include "core/types.h"

namespace f2obo {

inline constexpr size_t kMaxClientMetadataBytes = 65536;

struct SessionConfig {
  ProblemClass problem_class = ProblemClass::kBilevel;
  FamilyConfig family;
  // Named, always: a spec naming none gets its class's default where it is
  // converted (proto/f2obo/v1/convert.cc), from the class registry
  // (core/problem_registry.cc, DefaultAlgorithm), the default's one home.
  // Empty is refused as an unknown algorithm.
  std::string algorithm;
  AlgorithmOptions options;  // start from the algorithm's DefaultOptions
  ConstraintSet constraint;
  // Initial point.  Empty x0: the family's default start projected onto X
  // (the projection of 0 for most families).  Bilevel: empty y0 is 0,
  // empty z0 is y0.  A given x0 must lie in X.
  Vector x0, y0, z0;
  uint64_t seed = 0;
  // Opaque to the service: what the client keeps with the session (e.g.
  // the fingerprint of the model y flattens); bounded by
  // kMaxClientMetadataBytes.
  std::string client_metadata;
  // Names of consecutive groups of x's entries, for display only (the
  // proto's SessionSpec.x_groups): the service never reads them in a round.
  struct XGroup {
    std::string name;
    int size = 0;
  };
  std::vector<XGroup> x_groups;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SESSION_CONFIG_H_
