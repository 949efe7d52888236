#include "core/multitask/multitask_metrics_evaluator.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/multitask/multitask_state.h"

namespace f2obo {

void MultitaskMetricsEvaluator::Observe(const StepData& data) {
  for (const TaskData& td : data.tasks) {
    auto [it, fresh] = latest_.try_emplace(td.task);
    if (!fresh) by_when_.erase(it->second.when);
    it->second.data = td.data;
    it->second.when = ++observed_;
    by_when_[observed_] = td.task;
  }
  // Keep the most recently seen tasks.
  while (latest_.size() > static_cast<size_t>(kMaxMetricsTasks)) {
    latest_.erase(by_when_.begin()->second);
    by_when_.erase(by_when_.begin());
  }
}

absl::StatusOr<ClassMetrics> MultitaskMetricsEvaluator::Evaluate(const SessionState& before,
                                                                 const StepReport& report,
                                                                 const StepData& /*current*/,
                                                                 const StepData* /*previous*/) {
  const auto start = std::chrono::steady_clock::now();
  const MultitaskReport& r = std::get<MultitaskReport>(report.detail);
  MultitaskMetrics m;
  m.t = before.t;
  m.tasks_touched = table_.touched(before);
  const Vector& x = before.x;
  const double gamma = r.gamma > 0.0 ? r.gamma : gamma_;
  Vector grad = Vector::Zero(x.size());
  Vector mapping(x.size());
  // Tasks in increasing order: the sums are a deterministic function of
  // the batches seen.
  for (auto& [task, seen] : latest_) {
    const StepData& data = seen.data;
    const int slot = table_.Find(before, task);
    const Vector warm = slot >= 0 ? Vector(table_.Var(before, slot, 0)) : y0_;
    BilevelFamily& f = family_->Task(task, data);
    const TrueHypergradient th = ComputeTrueHypergradientWarm(f, x, data, warm, {}, &seen.warm);
    grad += th.grad;
    m.value += th.value;
    const bool converged = th.inner.converged && th.cg_converged;
    if (!converged) ++m.unconverged_tasks;
    ++m.tasks_evaluated;
    if (task < kReportedTasks) {
      GradientMapping(set_, x, th.grad, gamma, &mapping);
      m.tasks.push_back({task, th.value, mapping.squaredNorm(), converged});
    }
  }
  if (m.tasks_evaluated > 0) {
    grad /= m.tasks_evaluated;
    m.value /= m.tasks_evaluated;
  }
  GradientMapping(set_, x, grad, gamma, &mapping);
  m.regret_term = mapping.squaredNorm();
  m.true_gradient_norm = grad.norm();
  m.hypergradient_error =
      r.direction.size() == grad.size() ? (r.direction - grad).norm() : grad.norm();
  std::vector<double> figures = {m.value, m.regret_term, m.true_gradient_norm,
                                 m.hypergradient_error};
  for (const TaskMetrics& tm : m.tasks) figures.insert(figures.end(), {tm.value, tm.regret_term});
  for (double v : figures) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("multi-task exact metrics at step ", m.t, " are not finite"));
    }
  }
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ClassMetrics(m);
}

void AccumulateMultitask(const MultitaskMetrics& m, RunningMetrics* r, double probability) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (r->evaluated_steps < kMax) ++r->evaluated_steps;
  if (r->sums.size() < kMultitaskSumCount) r->sums.resize(kMultitaskSumCount, 0.0);
  if (m.Converged()) {
    r->sums[kMultitaskBlreg] += m.regret_term;
  } else {
    r->sums[kMultitaskUnconvergedSteps] += 1.0;
  }
  for (const TaskMetrics& tm : m.tasks) {
    if (tm.converged) r->sums[kMultitaskTaskRegret + tm.task] += tm.regret_term;
  }
  AddSampledTerm(m.Converged() ? std::optional<double>(m.regret_term) : std::nullopt, probability,
                 kMultitaskSampleSlots, r);
}

}  // namespace f2obo
