// The bilevel class's algorithms, by name.  Adding one: its file (the
// algorithm and its entry) plus one line in bilevel_algorithm_registry.cc.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_REGISTRY_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_REGISTRY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/algorithm_info.h"
#include "core/bilevel/bilevel_algorithm.h"
#include "core/constraint.h"
#include "core/options.h"

namespace f2obo {

// What a factory gets: validated options (copied, never referenced) and the
// session's shapes.
struct BilevelAlgorithmContext {
  absl::string_view name;
  AlgorithmOptions options;
  ConstraintSet constraint;
  int x_dim = 0;
  int y_dim = 0;
  // Automatic inner steps from secants (core/bilevel/hypergradients/secant_steps.h):
  // a family without HVPs (the oracle family) and alpha or beta automatic.
  bool secant_steps = false;
};

struct BilevelAlgorithmEntry {
  AlgorithmInfo info;
  // Builds the algorithm for validated options; may still refuse a session
  // it cannot serve (e.g. svrb's explicit-dimension limit).
  absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> (*create)(const BilevelAlgorithmContext&);
};

// In registration order.
const std::vector<const BilevelAlgorithmEntry*>& BilevelAlgorithms();
// nullptr if `name` is not a bilevel algorithm.
const BilevelAlgorithmEntry* FindBilevelAlgorithm(absl::string_view name);

// Validates ctx.options for the bilevel algorithm ctx.name (its rules and
// check) and builds it; INVALID_ARGUMENT naming the field otherwise.
absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> CreateBilevelAlgorithm(
    const BilevelAlgorithmContext& ctx);

// Whether the penalty multiplier lambda is part of what the entry's rounds
// read (the F2OBO family): they read lambda1.
inline bool ReadsLambda(const AlgorithmInfo& info) { return info.reads.Has(Opt::lambda1); }

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_ALGORITHM_REGISTRY_H_
