// The bilevel problem class (SPEC sections 2-5): families of
// core/bilevel/bilevel_family_registry.cc, algorithms of
// core/bilevel/bilevel_algorithm_registry.cc, state x, y, z, lambda (core/bilevel/bilevel_state.h),
// the round report of core/bilevel/bilevel_report.h and the hypergradient metrics of
// core/bilevel/bilevel_exact_metrics.h.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_PROBLEM_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_PROBLEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/algorithm_info.h"
#include "core/problem.h"
#include "core/session_config.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<Problem>> CreateBilevelProblem(const SessionConfig& config);
std::vector<std::string> BilevelFamilyNames();
std::vector<const AlgorithmInfo*> BilevelAlgorithmInfos();

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_PROBLEM_H_
