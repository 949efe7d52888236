// What one round did, returned by value (never logged by core/): the parts
// every problem class has, and the class's own report.
#ifndef F2OBO_CORE_STEP_REPORT_H_
#define F2OBO_CORE_STEP_REPORT_H_

#include <cstdint>
#include <optional>
#include <variant>

#include "core/problem_classes.h"

namespace f2obo {

// One alternative per problem class, in the order of core/problem_classes.h.
using ClassReport = AllProblemClasses::Reports;

struct StepReport {
  int64_t t = 0;  // index of the step this round applied
  int64_t rows_processed = 0;
  int64_t inner_iterations = 0;  // inner gradient steps of every loop
  bool cap_hit = false;          // an inner loop stopped at its iteration cap
  // Prequential ("progressive validation"): the upper loss on the step's
  // fresh upper batch, before the round learned from it (bilevel:
  // f_t(x_t, y_t); simple bilevel: f_t at the decision served), and the accuracy there for
  // classification families.
  double upper_loss_before = 0.0;
  std::optional<double> accuracy_before;
  double round_seconds = 0.0;
  ClassReport detail;
};

// The class part of a bilevel session's report.
inline const BilevelReport& BilevelPart(const StepReport& r) {
  return std::get<BilevelReport>(r.detail);
}

}  // namespace f2obo

#endif  // F2OBO_CORE_STEP_REPORT_H_
