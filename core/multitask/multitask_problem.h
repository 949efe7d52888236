// The multi-task bilevel problem class (SPEC section 9.3): m
// lower-level problems sharing x.  Families of core/multitask/
// multitask_family.cc, algorithms of core/multitask/multitask_algorithms.cc,
// state x, lambda and the per-task state of core/multitask/task_table.h,
// the report of multitask_report.h and the metrics of multitask_metrics.h.
//
// Why a class of its own rather than the bilevel class with m lower
// problems: its state has no fixed shape (per-task state appears as tasks
// are touched, SessionState::vectors cannot hold it), its steps carry
// tagged per-task batches (StepData::tasks) that single-task rounds must
// refuse, and its metrics are over the tasks seen, not one step's batches.
// Shared with the bilevel class: every task's oracle is a BilevelFamily
// and every per-task computation is a bilevel piece (SVRB's estimators,
// F2OBO's loops, the exact hypergradient).
#ifndef F2OBO_CORE_MULTITASK_MULTITASK_PROBLEM_H_
#define F2OBO_CORE_MULTITASK_MULTITASK_PROBLEM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/algorithm_info.h"
#include "core/multitask/multitask_family.h"
#include "core/multitask/task_table.h"
#include "core/problem.h"
#include "core/session_config.h"

namespace f2obo {

absl::StatusOr<std::unique_ptr<Problem>> CreateMultitaskProblem(const SessionConfig& config);
// The same with a family of the caller's (tests: a counting wrapper); it
// must have the config family's shapes.  The metrics evaluator still builds
// its own family from the config.
absl::StatusOr<std::unique_ptr<Problem>> CreateMultitaskProblem(
    const SessionConfig& config, std::unique_ptr<MultitaskFamily> family);
std::vector<std::string> MultitaskFamilyNameList();
// The per-task encoding of a multi-task problem's state (nullptr for a
// problem of another class).
const TaskTable* MultitaskTable(const Problem& problem);
// m, or 0 for a problem of another class.
int MultitaskTaskCount(const Problem& problem);
std::vector<const AlgorithmInfo*> MultitaskAlgorithmInfos();

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_MULTITASK_PROBLEM_H_
