// FSOBO, the fully single-loop online bilevel optimizer of Jia et al.
// (2026): one inner GD step and one linear-system step per round, then an
// AID hypergradient.  See fsobo.cc.
#ifndef F2OBO_CORE_ALGORITHMS_FSOBO_H_
#define F2OBO_CORE_ALGORITHMS_FSOBO_H_

#include "core/algorithm_registry.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<Algorithm>> CreateFsobo(const AlgorithmContext& ctx);

// Registry defaults (K = M = 1) and the check that keeps them at 1.
void FsoboDefaults(AlgorithmOptions* o);
absl::Status FsoboCheck(const AlgorithmOptions& o);

}  // namespace f2obo

#endif  // F2OBO_CORE_ALGORITHMS_FSOBO_H_
