// Multi-task streams and session builders shared by the multi-task tests.
#ifndef F2OBO_TESTS_CORE_MULTITASK_MULTITASK_STREAMS_H_
#define F2OBO_TESTS_CORE_MULTITASK_MULTITASK_STREAMS_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/session.h"

namespace f2obo::testing {

// m static quadratic tasks (multitask_quadratic with least-squares f):
// g_i = (mu/2)||y - (M_i x + c_i)||^2, f_i = (1/2)||y - d_i||^2, so
// y_i*(x) = M_i x + c_i and grad F_i(x) = M_i^T (M_i x + c_i - d_i).
struct QuadraticTasks {
  int d1 = 0, d2 = 0;
  std::vector<Matrix> M;
  std::vector<Vector> c, d;
  QuadraticTasks(int m, int d1, int d2, uint64_t seed);
  int m() const { return static_cast<int>(M.size()); }
  TaskData Task(int i, double probability = 0.0) const;
  // One step carrying `tasks`.
  StepData Step(const std::vector<int>& tasks) const;
  // grad F over the tasks `over` (all m when empty), in closed form.
  Vector GradF(const Vector& x, const std::vector<int>& over = {}) const;
  FamilyConfig BilevelFamily() const;
};

// A multi-task session config with the registry defaults of `algorithm`.
SessionConfig MultitaskConfig(const std::string& algorithm, const FamilyConfig& family,
                              const ConstraintSet& set);

// multitask_logistic_hpo with `features` columns and `classes` classes.
FamilyConfig LogisticTasksFamily(int tasks, int features, int classes,
                                 double max_temperature = 1.0);
// One step of classification batches for `tasks`.
StepData LogisticTasksStep(const std::vector<int>& tasks, int features, int classes, int rows,
                           std::mt19937_64& rng);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_MULTITASK_MULTITASK_STREAMS_H_
