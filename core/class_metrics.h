// The exact metrics of one step, shaped by the problem class: one
// alternative per class, in the order of core/problem_classes.h.
#ifndef F2OBO_CORE_CLASS_METRICS_H_
#define F2OBO_CORE_CLASS_METRICS_H_

#include "core/problem_classes.h"

namespace f2obo {

using ClassMetrics = AllProblemClasses::Metrics;

}  // namespace f2obo

#endif  // F2OBO_CORE_CLASS_METRICS_H_
