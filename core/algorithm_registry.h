// Algorithms by name.  Adding one = one file plus one line in
// algorithm_registry.cc.
#ifndef F2OBO_CORE_ALGORITHM_REGISTRY_H_
#define F2OBO_CORE_ALGORITHM_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/algorithm.h"
#include "core/constraint.h"
#include "core/options.h"

namespace f2obo {

// What a factory gets: validated options (copied, never referenced) and the
// session's shapes.
struct AlgorithmContext {
  std::string name;
  AlgorithmOptions options;
  ConstraintSet constraint;
  int x_dim = 0;
  int y_dim = 0;
};

// The defaults a session of `algorithm` starts from (the paper's settings
// for it; e.g. f2obo_sl takes K = 1, tau = 1/3).  Unknown names get the
// generic defaults; CreateAlgorithm reports them.
AlgorithmOptions DefaultAlgorithmOptions(const std::string& algorithm);

// Validates ctx.options for ctx.name and builds the algorithm.
absl::StatusOr<std::unique_ptr<Algorithm>> CreateAlgorithm(const AlgorithmContext& ctx);

// Whether `algorithm`'s rounds read SessionState::lambda (false if unknown).
bool AlgorithmReadsLambda(const std::string& algorithm);

std::vector<std::string> AlgorithmNames();

}  // namespace f2obo

#endif  // F2OBO_CORE_ALGORITHM_REGISTRY_H_
