// AF2OBO (paper Algorithm 2): adaptive inner iterations to tolerances.
#ifndef F2OBO_CORE_ALGORITHMS_AF2OBO_H_
#define F2OBO_CORE_ALGORITHMS_AF2OBO_H_

#include "core/algorithm_registry.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<Algorithm>> CreateAf2obo(const AlgorithmContext& ctx);

}  // namespace f2obo

#endif  // F2OBO_CORE_ALGORITHMS_AF2OBO_H_
