#include "tests/core/multitask/multitask_streams.h"

#include "core/problem_registry.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo::testing {

QuadraticTasks::QuadraticTasks(int m, int d1_, int d2_, uint64_t seed) : d1(d1_), d2(d2_) {
  std::mt19937_64 rng(seed);
  for (int i = 0; i < m; ++i) {
    M.push_back(WellConditioned(d2, d1, 0.5, 1.5, rng));
    c.push_back(RandomVector(d2, rng));
    d.push_back(RandomVector(d2, rng));
  }
}

TaskData QuadraticTasks::Task(int i, double probability) const {
  TaskData t;
  t.task = i;
  t.data = QuadraticStep(M[i], c[i], d[i]);
  t.probability = probability;
  return t;
}

StepData QuadraticTasks::Step(const std::vector<int>& tasks) const {
  StepData s;
  for (int i : tasks) s.tasks.push_back(Task(i));
  return s;
}

Vector QuadraticTasks::GradF(const Vector& x, const std::vector<int>& over) const {
  std::vector<int> tasks = over;
  if (tasks.empty()) {
    for (int i = 0; i < m(); ++i) tasks.push_back(i);
  }
  Vector g = Vector::Zero(d1);
  for (int i : tasks) g += M[i].transpose() * (M[i] * x + c[i] - d[i]);
  return g / static_cast<double>(tasks.size());
}

FamilyConfig QuadraticTasks::BilevelFamily() const {
  FamilyConfig f;
  f.name = "multitask_quadratic";
  f.x_dim = d1;
  f.y_dim = d2;
  f.tasks = m();
  return f;
}

SessionConfig MultitaskConfig(const std::string& algorithm, const FamilyConfig& family,
                              const ConstraintSet& set) {
  SessionConfig c;
  c.problem_class = ProblemClass::kMultitaskBilevel;
  c.family = family;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  c.constraint = set;
  return c;
}

FamilyConfig LogisticTasksFamily(int tasks, int features, int classes, double max_temperature) {
  FamilyConfig f;
  f.name = "multitask_logistic_hpo";
  f.features = features;
  f.classes = classes;
  f.tasks = tasks;
  f.max_temperature = max_temperature;
  return f;
}

StepData LogisticTasksStep(const std::vector<int>& tasks, int features, int classes, int rows,
                           std::mt19937_64& rng) {
  StepData s;
  for (int i : tasks) {
    TaskData t;
    t.task = i;
    t.data.upper = ClassificationBatch(rows, features, classes, false, rng);
    t.data.inner = ClassificationBatch(rows, features, classes, false, rng);
    s.tasks.push_back(std::move(t));
  }
  return s;
}

}  // namespace f2obo::testing
