// mt_f2obo, a first-order multi-task round (our extension, not from a
// paper): per step t, for every task i the step carries, F2OBO's round on
// task i's batches (paper Alg. 1 lines 4-9, the same code as f2obo.cc),
//   for k = 1..K:  z_i <- z_i - alpha grad_y g_i(x_t, z_i)
//                  y_i <- y_i - beta_t (grad_y f_i + lambda_t grad_y g_i)(x_t, y_i)
//   h_i = grad_x f_i(x_t, y_i) + lambda_t (grad_x g_i(x_t, y_i) - grad_x g_i(x_t, z_i)),
// then one step on the weighted average of EVERY touched task's latest h_i:
//   D_t = sum_i w_i h_i / sum_i w_i,   w_i = rho^(t - s_i),
//   x_{t+1} = P_X(x_t - gamma_t D_t),  lambda_{t+1} = (1 + 1/t)^tau lambda_t
// where s_i is the step of task i's last update and rho =
// options.task_momentum.  Stale estimates are kept (a SAG-style average over
// the tasks, which the step samples) and weighted as RSVRB weights a task's
// estimators between its samples: by rho per step it is not sampled
// (rsvrb.cc's lazy decay).  Default rho = 1: the plain average of the
// latest estimates, whose fixed points are the stationary points of F over
// the touched tasks; rho < 1 favours recent tasks (drifting streams).
// Unlike RSVRB it needs no Hessians and no 1/p_i weights (each h_i is an
// estimate of grad F_i itself, not of m p_i grad F_i).
//
// Choices:
//  * The sums S = sum w_i h_i and W = sum w_i are kept in the state and
//    updated in O(d1) per task: each step multiplies both by rho, then a
//    task updated at step t replaces its old term w h_old (w = rho^(t - s_i))
//    by 1 h_new.  With rho = 1, W is the number of touched tasks exactly;
//    S carries the rounding of those replacements (a relative 1e-16 per
//    step), so mt_f2obo with m = 1 equals f2obo up to that rounding, not bit
//    for bit.
//  * Step sizes, lambda schedule, auto step sizes (estimated on the task's
//    batches) and options as f2obo; lambda_t is the session's (one per step,
//    shared by the tasks), so a task sampled rarely resumes its y_i at a
//    larger multiplier than it left it.
//  * Initial y_i = spec y0 (else 0), z_i = spec z0 (else y0).
//  * residual_y, residual_z in the report: the means over the step's tasks.
// Per-task state: 2 d2 + d1 + 1 doubles per touched task.
#include "core/multitask/mt_f2obo.h"

#include <cmath>
#include <vector>

#include "core/bilevel/hypergradients/first_order.h"

namespace f2obo {
namespace {

class MtF2obo final : public MultitaskAlgorithm {
 public:
  explicit MtF2obo(const MultitaskAlgorithmContext& ctx)
      : o_(ctx.options),
        set_(ctx.constraint),
        d1_(ctx.x_dim),
        d2_(ctx.y_dim),
        y0_(ctx.y0),
        z0_(ctx.z0),
        ws_(d1_, d2_),
        direction_(d1_) {
    scratch_.hypergradient.resize(d1_);
  }

  std::vector<int> GlobalLayout() const override { return {d1_, 1}; }
  std::vector<int> TaskLayout() const override { return {d2_, d1_, 1}; }
  std::vector<Vector> InitialGlobals(const VecIn&) const override {
    return {Vector::Zero(d1_), Vector::Zero(1)};
  }
  std::vector<Vector> InitialTaskBlock() const override {
    return {y0_, z0_, Vector::Zero(d1_), Vector::Zero(1)};
  }
  absl::Status ValidateTaskState(const SessionState& s, const TaskTable& table) const override {
    if (absl::Status st = CheckLastUpdateSteps(s, table, kMtMeta); !st.ok()) return st;
    // W >= 1 up to rounding once a task was touched (the latest task's
    // weight is 1); D divides by it.
    if (!(table.Global(s, kMtWeight)[0] >= 0.5) && table.touched(s) > 0) {
      return absl::InvalidArgumentError(
          "state.aux[2][0]: the sum of the task weights must be >= 1 once a task was touched");
    }
    return absl::OkStatus();
  }

  absl::Status Round(const StepData& data, MultitaskFamily& family, const TaskTable& table,
                     SessionState* s, MultitaskReport* report) override {
    const int64_t t = s->t;
    const double lambda = s->scalars[kMultitaskLambda];
    const double rho = o_.task_momentum;
    table.Global(s, kMtSum) *= rho;
    table.Global(s, kMtWeight) *= rho;
    double residual_y = 0.0, residual_z = 0.0;
    int64_t rows = 0;
    StepSizes steps;
    for (const TaskData& td : data.tasks) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      int slot = table.Find(*s, td.task);
      const bool first = slot < 0;
      if (first) {
        slot = table.Insert(s, td.task, InitialTaskBlock());
        ++report->new_tasks;
      }
      BilevelFamily& f = family.Task(td.task, td.data);
      // The task's vectors, worked on in block_ and stored back at the end.
      table.Load(*s, slot, &block_);
      Vector& y = block_[kMtY];
      Vector& z = block_[kMtZ];
      const Smoothness sm = SmoothnessIfAuto(o_, f, s->x, y, td.data);
      steps = DeterministicStepSizes(o_, sm, lambda, t);
      const BatchView upper = BatchView::All(td.data.upper);
      const BatchView inner = BatchView::All(td.data.inner);
      absl::StatusOr<int64_t> inner_rows =
          PenaltyInnerLoops(f, s->x, steps.alpha, steps.beta, lambda, o_.inner_steps, upper, inner,
                            &y, &z, &ws_, round_control());
      if (!inner_rows.ok()) return inner_rows.status();
      rows += *inner_rows;
      rows += Hypergradient(f, s->x, y, z, lambda, upper, inner, &ws_, &scratch_);
      residual_y += scratch_.residual_y;
      residual_z += scratch_.residual_z;
      // Replace the task's old term w h_old by 1 h_new.
      Vector& h = block_[kMtH];
      Vector& meta = block_[kMtMeta];
      const double w_old = first ? 0.0 : std::pow(rho, static_cast<double>(t) - meta[0]);
      Vector& sum = table.Global(s, kMtSum);
      sum += scratch_.hypergradient;
      sum.noalias() -= w_old * h;
      table.Global(s, kMtWeight)[0] += 1.0 - w_old;
      h = scratch_.hypergradient;
      meta[0] = static_cast<double>(t);
      table.Store(s, slot, block_);
    }
    direction_ = table.Global(*s, kMtSum) / table.Global(*s, kMtWeight)[0];
    ProjectedStep(set_, steps.gamma, direction_, &s->x);
    s->scalars[kMultitaskLambda] = NextLambda(o_, t, lambda);

    const int k = static_cast<int>(data.tasks.size());
    report->tasks = k;
    report->tasks_touched = table.touched(*s);
    report->lambda = lambda;
    report->alpha = steps.alpha;
    report->beta = steps.beta;
    report->gamma = steps.gamma;
    report->z_iterations = report->y_iterations = o_.inner_steps;
    report->residual_y = residual_y / k;
    report->residual_z = residual_z / k;
    report->direction = direction_;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  AlgorithmOptions o_;
  ConstraintSet set_;
  int d1_, d2_;
  Vector y0_, z0_;
  FirstOrderWorkspace ws_;
  BilevelReport scratch_;
  Vector direction_;
  std::vector<Vector> block_;  // the task's vectors (TaskTable::Load)
};

absl::StatusOr<std::unique_ptr<MultitaskAlgorithm>> Create(const MultitaskAlgorithmContext& ctx) {
  return std::unique_ptr<MultitaskAlgorithm>(new MtF2obo(ctx));
}

// Default rho = 1 (see above); the rest are f2obo's.
// gamma: the fixed 0.001 (the automatic step is the bilevel class's).
void Defaults(AlgorithmOptions* o) {
  o->task_momentum = 1.0;
  o->gamma = kMultitaskDefaultGamma;
}

absl::Status Check(const AlgorithmOptions& o) {
  if (absl::Status s = CheckFixedUpperStep(o); !s.ok()) return s;
  return CheckPenaltyOptions(o);
}

}  // namespace

const MultitaskAlgorithmEntry& MtF2oboAlgorithm() {
  static const MultitaskAlgorithmEntry entry{
      {"mt_f2obo", ProblemClass::kMultitaskBilevel,
       "Multi-task F2OBO (our extension): F2OBO's loops and penalty hypergradient per task, "
       "x on the weighted average of every touched task's latest estimate",
       PenaltyRoundOptions().Add({Opt::alpha, Opt::alpha_auto, Opt::beta, Opt::beta_auto,
                                  Opt::beta_scaling, Opt::inner_steps, Opt::task_momentum}),
       &Defaults, &Check, nullptr, /*first_order=*/true},
      &Create};
  return entry;
}

}  // namespace f2obo
