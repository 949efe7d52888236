// Shape checks of the algorithm-owned vectors (SessionState::aux) of the
// simple bilevel algorithms, for SimpleAlgorithm::ValidateAux: a restored
// state whose aux is not the algorithm's layout is refused with
// INVALID_ARGUMENT naming the offending aux[i].
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_AUX_CHECKS_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_AUX_CHECKS_H_

#include <vector>

#include "absl/status/status.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

// Exactly `count` vectors: otherwise INVALID_ARGUMENT naming the first
// missing ("aux[i]: missing; ...") or extra ("aux[i]: unexpected; ...") one.
absl::Status CheckAuxCount(const StateParts& aux, int count, const char* algorithm);
// At least `count` vectors (the windowed algorithms: segments follow):
// otherwise "aux[n]: missing; ...".
absl::Status CheckAuxCountAtLeast(const StateParts& aux, int count, const char* algorithm);
// aux[i] has `size` entries: otherwise "aux[i]: has n entries, expected
// size (<what>)".
absl::Status CheckAuxSize(const StateParts& aux, int i, int size, const char* what);

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_AUX_CHECKS_H_
