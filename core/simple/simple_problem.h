// The simple bilevel problem class (SPEC section 9): families of
// core/simple/simple_family_registry.cc, algorithms of
// core/simple/simple_algorithm_registry.cc, state x plus the decision
// (core/simple/simple_state.h), the report of core/simple/simple_report.h
// and the optimality-gap metrics of core/simple/simple_metrics.h.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_PROBLEM_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_PROBLEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/algorithm_info.h"
#include "core/problem.h"
#include "core/session_config.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<Problem>> CreateSimpleProblem(const SessionConfig& config);
std::vector<std::string> SimpleFamilyNames();
std::vector<const AlgorithmInfo*> SimpleAlgorithmInfos();

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_PROBLEM_H_
