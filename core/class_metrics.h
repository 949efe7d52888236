// The exact metrics of one step, shaped by the problem class: one
// alternative per class (core/problem_class.h), in its order.
#ifndef F2OBO_CORE_CLASS_METRICS_H_
#define F2OBO_CORE_CLASS_METRICS_H_

#include <variant>

#include "core/metrics/exact_metrics.h"
#include "core/multitask/multitask_metrics.h"
#include "core/simple/simple_metrics.h"

namespace f2obo {

using ClassMetrics = std::variant<ExactMetrics, SimpleMetrics, MultitaskMetrics>;

}  // namespace f2obo

#endif  // F2OBO_CORE_CLASS_METRICS_H_
