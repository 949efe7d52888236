// The classes of problems a session can solve (SPEC section 9).  A class
// fixes the shape of a session's state, of its round report and of its
// exact metrics; every family and algorithm belongs to exactly one class.
// Each id here has its line, in this order, in core/problem_classes.h,
// which names the class's parts.
#ifndef F2OBO_CORE_PROBLEM_CLASS_H_
#define F2OBO_CORE_PROBLEM_CLASS_H_

#include "absl/strings/string_view.h"

namespace f2obo {

enum class ProblemClass {
  // min_x f(x, y*(x)), y*(x) = argmin_y g(x, y), g strongly convex in y:
  // state x, y, z, lambda; hypergradient metrics (SPEC sections 2-5).
  kBilevel,
  // min_{x in Z} f(x) s.t. x in argmin_{z in Z} g(z), f and g convex and
  // smooth, Z compact convex with a linear minimization oracle: state x and
  // the decision (plus estimators, windows); optimality-gap metrics
  // (SPEC section 9; core/simple/).
  kSimpleBilevel,
  // min_x F(x) = (1/m) sum_i f_i(x, y_i*(x)), y_i*(x) = argmin_y g_i(x, y):
  // m lower-level problems sharing x; a step carries batches tagged with
  // their task index; state x plus per-task state created when a task is
  // first touched; hypergradient metrics over the tasks seen (SPEC section
  // 9.3; core/multitask/).
  kMultitaskBilevel,
};

// "bilevel", ... (the wire's SessionSpec.problem_class).
absl::string_view ProblemClassName(ProblemClass c);

}  // namespace f2obo

#endif  // F2OBO_CORE_PROBLEM_CLASS_H_
