// The problem classes the core serves, one line each in AllProblemClasses
// (below), in the order of their ids (core/problem_class.h): the round
// report's and the exact metrics' alternatives (ClassReport, ClassMetrics)
// and the problem registry (ProblemClasses(), core/problem_registry.h)
// follow from this list.  A class's line names its report, its exact
// metrics and its registry entry, defined in the class's folder beside its
// Problem.  The wire converts ClassReport and ClassMetrics by their index,
// hence the order.
#ifndef F2OBO_CORE_PROBLEM_CLASSES_H_
#define F2OBO_CORE_PROBLEM_CLASSES_H_

#include <cstddef>
#include <variant>
#include <vector>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_report.h"
#include "core/multitask/multitask_metrics.h"
#include "core/multitask/multitask_report.h"
#include "core/problem_class.h"
#include "core/simple/simple_metrics.h"
#include "core/simple/simple_report.h"

namespace f2obo {

struct ProblemClassEntry;  // core/problem_registry.h

// One class: its id, its part of a round report, its exact metrics and
// its registry entry.
template <ProblemClass Id, typename R, typename M, const ProblemClassEntry& (*E)()>
struct ProblemClassParts {
  static constexpr ProblemClass kId = Id;
  using Report = R;
  using Metrics = M;
  static const ProblemClassEntry& Entry() { return E(); }
};

template <typename... C>
struct ProblemClassList {
  using Reports = std::variant<typename C::Report...>;
  using Metrics = std::variant<typename C::Metrics...>;
  static constexpr std::size_t kSize = sizeof...(C);
  static std::vector<const ProblemClassEntry*> Entries() { return {&C::Entry()...}; }
  static constexpr bool InIdOrder() {
    std::size_t i = 0;
    return ((static_cast<std::size_t>(C::kId) == i++) && ...);
  }
};

// The classes' entries, each defined in its folder's <class>_problem.cc.
const ProblemClassEntry& BilevelClassEntry();
const ProblemClassEntry& SimpleClassEntry();
const ProblemClassEntry& MultitaskClassEntry();

using AllProblemClasses = ProblemClassList<
    ProblemClassParts<ProblemClass::kBilevel, BilevelReport, ExactMetrics, &BilevelClassEntry>,
    ProblemClassParts<ProblemClass::kSimpleBilevel, SimpleReport, SimpleMetrics, &SimpleClassEntry>,
    ProblemClassParts<ProblemClass::kMultitaskBilevel, MultitaskReport, MultitaskMetrics,
                      &MultitaskClassEntry>>;

static_assert(AllProblemClasses::InIdOrder(),
              "AllProblemClasses lists the classes in the order of their ids");

}  // namespace f2obo

#endif  // F2OBO_CORE_PROBLEM_CLASSES_H_
