#include "core/multitask/multitask_problem.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/initial_point.h"
#include "core/multitask/multitask_algorithm.h"
#include "core/multitask/multitask_metrics_evaluator.h"
#include "core/multitask/multitask_state.h"
#include "core/oracle.h"
#include "core/problem_classes.h"
#include "core/problem_registry.h"

namespace f2obo {

StateLayout MultitaskLayout() {
  StateLayout layout{{}, {"lambda"}, {{"blreg"}, {"unconverged_steps", true}}};
  for (int i = 0; i < kReportedTasks; ++i) {
    layout.sums.push_back({absl::StrCat("task", i, "_regret")});
  }
  layout.sums.push_back({"skipped_steps", false, true});
  layout.sums.push_back({"blreg_estimate"});
  layout.sums.push_back({"blreg_estimate_variance"});
  return layout;
}

namespace {

bool IsEmpty(const Batch& b) {
  return b.rows() == 0 && b.cols() == 0 && b.labels.empty() && b.targets.size() == 0 &&
         b.class_weights.size() == 0 && b.M.size() == 0 && b.c.size() == 0 && b.d.size() == 0;
}

// Whether an algorithm's rounds read the penalty multiplier (mt_f2obo).
bool ReadsMultiplier(const AlgorithmInfo& info) { return info.reads.Has(Opt::lambda1); }

class MultitaskProblem final : public Problem {
 public:
  MultitaskProblem(const SessionConfig& config, std::unique_ptr<MultitaskFamily> family,
                   const MultitaskAlgorithmEntry& entry,
                   std::unique_ptr<MultitaskAlgorithm> algorithm, Vector y0)
      : config_(config),
        family_(std::move(family)),
        entry_(entry),
        algorithm_(std::move(algorithm)),
        y0_(std::move(y0)),
        layout_(MultitaskLayout()),
        table_(algorithm_->GlobalLayout(), Block(family_->y_dim(), *algorithm_), family_->tasks()) {
  }

  ProblemClass problem_class() const override { return ProblemClass::kMultitaskBilevel; }
  const AlgorithmInfo& algorithm() const override { return entry_.info; }
  int x_dim() const override { return family_->x_dim(); }
  const StateLayout& layout() const override { return layout_; }
  bool reads_tasks() const override { return true; }

  absl::Status ValidateData(const StepData& data) const override {
    if (!IsEmpty(data.upper) || !IsEmpty(data.inner)) {
      return absl::InvalidArgumentError(
          absl::StrCat(IsEmpty(data.upper) ? "inner" : "upper",
                       ": a multitask_bilevel step carries its batches in tasks[k].upper and "
                       "tasks[k].inner; the top-level upper and inner must be empty"));
    }
    if (data.tasks.empty()) {
      return absl::InvalidArgumentError(
          "tasks: a multitask_bilevel step carries the batches of at least one task");
    }
    const int m = family_->tasks();
    std::vector<int> seen;
    seen.reserve(data.tasks.size());
    for (size_t k = 0; k < data.tasks.size(); ++k) {
      const TaskData& td = data.tasks[k];
      if (td.task < 0 || td.task >= m) {
        return absl::InvalidArgumentError(
            absl::StrCat("tasks[", k, "].task: ", td.task, " is outside [0, m = ", m, ")"));
      }
      if (!(td.probability >= 0.0 && td.probability <= 1.0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("tasks[", k, "].probability: ", td.probability,
                         " must be in (0, 1], or 0 for the default k/m"));
      }
      if (td.probability > 0.0 && td.probability < kMinTaskProbability) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tasks[", k, "].probability: ", td.probability, " is below ", kMinTaskProbability,
            ": the task's estimates are weighted by 1/p, which must stay finite and at most ",
            1.0 / kMinTaskProbability));
      }
      if (!td.data.tasks.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tasks[", k, "]: a task's data carries no tasks of its own"));
      }
      for (auto [batch, role, name] :
           {std::make_tuple(&td.data.upper, BatchRole::kUpper, "upper"),
            std::make_tuple(&td.data.inner, BatchRole::kInner, "inner")}) {
        if (absl::Status s = family_->ValidateBatch(td.task, *batch, role); !s.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat("tasks[", k, "].", name, " (task ", td.task, "): ", s.message()));
        }
      }
      seen.push_back(td.task);
    }
    std::sort(seen.begin(), seen.end());
    if (auto dup = std::adjacent_find(seen.begin(), seen.end()); dup != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tasks: task ", *dup, " appears more than once in this step"));
    }
    return absl::OkStatus();
  }

  absl::Status InitState(const SessionConfig& c, SessionState* s) const override {
    const int d1 = family_->x_dim();
    Vector start(d1);
    family_->DefaultX(&start);
    if (absl::Status st = InitialX(c.x0, d1, c.constraint, "X", std::move(start), &s->x);
        !st.ok()) {
      return st;
    }
    s->vectors.clear();
    s->scalars = {ReadsMultiplier(entry_.info) ? c.options.lambda1 : 0.0};
    table_.Init(s, algorithm_->InitialGlobals(s->x));
    return absl::OkStatus();
  }

  absl::Status UpgradeRestored(SessionState* s) const override {
    if (TaskTable::IsLegacy(*s)) return table_.MigrateLegacy(s);
    if (TaskTable::IsPartPerVector(*s)) return table_.MigratePartPerVector(s);
    return absl::OkStatus();
  }

  absl::Status ValidateRestored(const SessionState& s) const override {
    // Every round projects x onto X: a state outside it was not made here.
    if (!config_.constraint.ContainsComputed(s.x)) {
      return absl::InvalidArgumentError("state.x: outside the constraint set X");
    }
    const double lambda = s.scalars[kMultitaskLambda];
    if (ReadsMultiplier(entry_.info) && !(lambda > 0.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.lambda: ", lambda, " is not a finite positive number"));
    }
    if (absl::Status st = table_.Validate(s); !st.ok()) return st;
    return algorithm_->ValidateTaskState(s, table_);
  }

  absl::Status Round(const StepData& data, SessionState* s, StepReport* report,
                     RoundControl* control) override {
    // Prequential: the mean over the step's tasks of f_i(x_t, y_i) on the
    // task's fresh upper batch (and of the accuracy there).
    double loss = 0.0, accuracy = 0.0;
    for (const TaskData& td : data.tasks) {
      const int slot = table_.Find(*s, td.task);
      // A copy: the families' products run on a Vector, as the round's do.
      const Vector y = slot >= 0 ? Vector(table_.Var(*s, slot, 0)) : y0_;
      BilevelFamily& f = family_->Task(td.task, td.data);
      const BatchView upper = BatchView::All(td.data.upper);
      const double l = f.F(s->x, y, upper, nullptr, nullptr);
      if (absl::Status st = family_->RoundFailure(); !st.ok()) return st;
      if (!std::isfinite(l)) {
        return absl::InvalidArgumentError(
            absl::StrCat("non-finite f_i(x_t, y_i) = ", l, " on task ", td.task,
                         "'s upper batch (feature values too large for the current point?)"));
      }
      loss += l;
      if (family_->is_classification()) accuracy += f.Accuracy(s->x, y, upper).value_or(0.0);
    }
    const double k = static_cast<double>(data.tasks.size());
    report->upper_loss_before = loss / k;
    if (family_->is_classification()) report->accuracy_before = accuracy / k;
    MultitaskReport& r = report->detail.emplace<MultitaskReport>();
    const ScopedRoundControl stoppable(algorithm_.get(), control);
    absl::Status round = algorithm_->Round(data, *family_, table_, s, &r);
    // A failed evaluation (an oracle session's client) says why better
    // than what the round made of the NaN it left.
    if (absl::Status st = family_->RoundFailure(); !st.ok()) return st;
    if (!round.ok()) return round;
    if (!r.direction.allFinite()) {
      return absl::InvalidArgumentError(
          "the round produced a non-finite direction for x (step sizes too large for this "
          "batch?)");
    }
    report->rows_processed = r.rows_processed;
    report->inner_iterations =
        static_cast<int64_t>(r.tasks) * (static_cast<int64_t>(r.z_iterations) + r.y_iterations);
    report->cap_hit = false;
    return absl::OkStatus();
  }

  const Vector& Decision(const SessionState& s) const override { return s.x; }
  // After a step every task it carried holds state (its first step
  // inserts it).
  std::vector<Vector> InnerVariables(const SessionState& s, const StepData& data) const override {
    std::vector<Vector> out;
    out.reserve(data.tasks.size());
    for (const TaskData& td : data.tasks) {
      const int slot = table_.Find(s, td.task);
      out.push_back(slot >= 0 ? Vector(table_.Var(s, slot, 0)) : y0_);
    }
    return out;
  }

  // Each evaluation solves every seen task's inner problem: every 10th step.
  // None without HVPs (multitask_oracle): the true hypergradient needs them.
  int DefaultExactEvery() const override { return family_->has_hvp() ? 10 : 0; }
  bool HasExactMetrics() const override { return family_->has_hvp(); }

  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> NewMetricsEvaluator() const override {
    absl::StatusOr<std::unique_ptr<MultitaskFamily>> family = CreateMultitaskFamily(config_.family);
    if (!family.ok()) return family.status();
    return std::unique_ptr<MetricsEvaluator>(new MultitaskMetricsEvaluator(
        *std::move(family), config_.constraint, config_.options.gamma, table_, y0_));
  }

  void Accumulate(const ClassMetrics& m, double probability,
                  RunningMetrics* running) const override {
    AccumulateMultitask(std::get<MultitaskMetrics>(m), running, probability);
  }
  void AccumulateSkipped(RunningMetrics* running) const override {
    if (running->sums.size() < kMultitaskSumCount) running->sums.resize(kMultitaskSumCount, 0.0);
    AddSkippedStep(kMultitaskSampleSlots, running);
  }

  const TaskTable& table() const { return table_; }
  int tasks() const { return family_->tasks(); }

 private:
  static std::vector<int> Block(int y_dim, const MultitaskAlgorithm& a) {
    std::vector<int> block = {y_dim};
    for (int size : a.TaskLayout()) block.push_back(size);
    return block;
  }

  const SessionConfig config_;
  std::unique_ptr<MultitaskFamily> family_;
  const MultitaskAlgorithmEntry& entry_;
  std::unique_ptr<MultitaskAlgorithm> algorithm_;
  const Vector y0_;
  const StateLayout layout_;
  const TaskTable table_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Problem>> CreateMultitaskProblem(
    const SessionConfig& c, std::unique_ptr<MultitaskFamily> family) {
  const int d1 = family->x_dim(), d2 = family->y_dim();
  if (absl::Status s = c.constraint.Validate(d1); !s.ok()) return s;
  if (absl::Status s = family->ValidateConstraint(c.constraint); !s.ok()) return s;
  absl::StatusOr<const AlgorithmInfo*> info =
      CheckAlgorithm(ProblemClass::kMultitaskBilevel, c.algorithm, c.options);
  if (!info.ok()) return info.status();
  const MultitaskAlgorithmEntry& entry = *FindMultitaskAlgorithm(c.algorithm);
  if (!family->has_hvp()) {
    if (absl::Status s =
            CheckOracleServes(family->name(), entry.info, c.options, MultitaskAlgorithmInfos());
        !s.ok()) {
      return s;
    }
  }
  // Every task starts from y0 (else 0) and, for mt_f2obo, z0 (else y0).
  Vector y0 = c.y0.size() == 0 ? Vector::Zero(d2) : c.y0;
  if (absl::Status s = CheckVector(y0, d2, "initial.y"); !s.ok()) return s;
  Vector z0 = c.z0.size() == 0 ? y0 : c.z0;
  if (absl::Status s = CheckVector(z0, d2, "initial.z"); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<MultitaskAlgorithm>> algorithm = entry.create(
      MultitaskAlgorithmContext{c.options, c.constraint, d1, d2, family->tasks(), y0, z0});
  if (!algorithm.ok()) return algorithm.status();
  return std::unique_ptr<Problem>(
      new MultitaskProblem(c, std::move(family), entry, *std::move(algorithm), std::move(y0)));
}

absl::StatusOr<std::unique_ptr<Problem>> CreateMultitaskProblem(const SessionConfig& c) {
  absl::StatusOr<std::unique_ptr<MultitaskFamily>> family = CreateMultitaskFamily(c.family);
  if (!family.ok()) return family.status();
  return CreateMultitaskProblem(c, *std::move(family));
}

std::vector<std::string> MultitaskFamilyNameList() { return MultitaskFamilyNames(); }

const TaskTable* MultitaskTable(const Problem& problem) {
  const auto* p = dynamic_cast<const MultitaskProblem*>(&problem);
  return p != nullptr ? &p->table() : nullptr;
}

int MultitaskTaskCount(const Problem& problem) {
  const auto* p = dynamic_cast<const MultitaskProblem*>(&problem);
  return p != nullptr ? p->tasks() : 0;
}

std::vector<const AlgorithmInfo*> MultitaskAlgorithmInfos() {
  std::vector<const AlgorithmInfo*> out;
  for (const MultitaskAlgorithmEntry* e : MultitaskAlgorithms()) out.push_back(&e->info);
  return out;
}

const ProblemClassEntry& MultitaskClassEntry() {
  static const ProblemClassEntry entry{
      ProblemClass::kMultitaskBilevel, "multitask_bilevel",
      "min_x (1/m) sum_i f_i(x, y_i*(x)), y_i*(x) = argmin_y g_i(x, y): m lower-level "
      "problems sharing x, steps tagged with task indices",
      // mt_f2obo, not rsvrb: rsvrb builds explicit x_dim x y_dim and y_dim^2
      // matrices per task (max_explicit_dim <= 2048) and refuses the
      // README's own data (digits: y_dim 650; Fashion-MNIST: 7850).
      "mt_f2obo",
      "first-order, so it takes any y_dim: rsvrb builds explicit x_dim x y_dim and y_dim^2 "
      "matrices per task (max_explicit_dim <= 2048) and refuses the README's data. Where rsvrb "
      "fits, mt_f2obo's defaults learn better at 1/8 of its server CPU (three seeds of the "
      "quality suite: held-out F 0.334 vs 0.849, the best uniform penalty in hindsight 0.706, "
      "untuned 0.954; bench/RESULTS.md, bench/EXPERIMENTS.md section 13)",
      /*oracle_default_algorithm=*/"mt_f2obo", &MultitaskFamilyNameList, &MultitaskAlgorithmInfos,
      static_cast<absl::StatusOr<std::unique_ptr<Problem>> (*)(const SessionConfig&)>(
          &CreateMultitaskProblem),
      &FamilyClassifies<&CreateMultitaskFamily>};
  return entry;
}

}  // namespace f2obo
