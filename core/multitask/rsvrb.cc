// RSVRB: Z. Guo, Q. Hu, L. Zhang, T. Yang, "Randomized stochastic
// variance-reduced methods for multi-task stochastic bilevel optimization",
// arXiv:2105.02266, Algorithm 2, for F(x) = (1/m) sum_i f_i(x, y_i*(x)).
// Per step t, for every task i the step carries (the sampled i_t; the
// client samples, see below), with p_i its sampling probability:
//   u_i <- Pi_{C_fx}[(1-b)(u_i - grad_x f_i(x_{t-1}, y_{i,t-1})/p_i) + grad_x f_i(x_t, y_i,t)/p_i]
//   w_i <- Pi_{C_fy}[... the same for grad_y f_i ...]                       (lines 4-5)
//   J_i <- S^u_C[... grad2_xy g_i ...],  H_i <- S^l_lambda[... grad2_yy g_i ...]  (6-7)
//   v_i <- ... grad_y g_i ...                                             (line 8)
//   z_i  = u_i - J_i H_i^{-1} w_i                                         (line 9)
//   y_i <- y_i - alpha v_i                                                (line 15)
// f on a draw xi, g on a draw zeta of the task's batches, both points on the
// same draws: exactly SVRB's round (core/bilevel/hypergradients/svrb_estimators.h, the
// same code) with the sampled task's derivatives scaled by 1/p_i.  Every
// other task's estimators decay: u, w, J, v <- (1-b)(.), H <- S^l_lambda[(1-b) H],
// y_i <- y_i - alpha v_i ("delay update until sampled").  Then
//   j_t uniform in [0, m);  d <- (1-b_d)(d - z_{j,t}) + z_{j,t+1}   (lines 10-13)
//   x_{t+1} = P_X(x_t - gamma d)                                    (line 14)
// with 1 - b = options.momentum (svrb's option; rsvrb's default 0.99, see
// Defaults), 1 - b_d = options.task_momentum at constant steps; with the decaying schedule (below)
// step t uses 1 - b_t, 1 - b_d,t, gamma_t and alpha_t instead.
//
// The delayed decay, exactly: a task last updated at step s holds its
// values after that update (time s+1).  k = t - 1 - s unsampled steps
// (j = s+1..t-1) later its time-t values are
//   u, w, v, J scaled by c = prod_j (1-b_j)  (= (1-b)^k at constant steps);
//   H = Q diag(max(c l_i, lambda)) Q^T for the eigendecomposition Q diag(l) Q^T
//     of its (projected, so l_i >= lambda) H: S^l_lambda[(1-b_j) .] keeps the
//     eigenvectors and max(f max(a, lambda), lambda) = max(f a, lambda) for
//     any factor f in [0, 1], so the factors multiply;
//   y = y_{s+1} - v_{s+1} sum_j alpha_j prod_{i=s+1..j} (1-b_i)  (each
//     skipped y-step uses the already decayed v; alpha_j = alpha_s s_j / s_s,
//     alpha_s the task's y-step at step s; at constant steps alpha_s
//     sum_{j=1..k} (1-b)^j, a geometric sum, O(1)).
// At constant steps this is O(1) per task; with the decaying schedule the
// product and the sum are a loop over the k skipped steps (a pow and a few
// flops each; rsvrb_schedule.h), never a ratio of prefix products, which
// underflow on long streams, and no new state: s is stored.  The loop runs
// when a task is caught up and for j_t's two z's, so a step costs O(k) for
// the sampled tasks' gaps plus j_t's (amortized O(m) per step at worst).
// These are computed when the task is next touched (sampled, or drawn as
// j_t, whose z_{j,t} and z_{j,t+1} are evaluated from the decayed values
// without data, Alg. 2 lines 11-12).  They equal the step-by-step updates up
// to rounding (tests/core/multitask/rsvrb_test.cc runs both).
//
// The paper's: Alg. 2's updates, Theorem 2's constant steps.  Ours (below):
// who samples, j_t's draw, the first round, the online indexing, the
// decaying schedule (SVRB's), the y-step alpha p_i and momentum 0.99.
//
// Choices where the source leaves room (and the service needs one):
//  * Who samples: the client.  A step carries the tasks the client sampled
//    (i_t, one or several as in the paper's App. E.2); p_i is the
//    probability the client gives with the task (TaskBatch.probability) or,
//    by default, k/m for a step of k tasks (uniform sampling without
//    replacement).  With m = 1, p = 1 and nothing is scaled.
//  * j_t is drawn by the server, uniformly in [0, m) from the session RNG,
//    before the tasks' mini-batches (so z_{j,t} is read before the round
//    overwrites it), independently of i_t; with m = 1 there is nothing to
//    draw and no randomness is consumed.  A never-touched j_t has z = 0
//    both times (its estimators are unknown until its data arrive).
//  * A task's first round starts its estimators at its derivatives (SVRB's
//    t = 1, the paper's u_0, ... at (x_0, y_0) with a large batch, taken when
//    the task's data first arrive); d starts at 0, so d_2 = z_{i_1} when
//    j_1 = i_1 and m = 1.
//  * Online indexing as in svrb.cc: step t's round samples step t's batches
//    and evaluates the correction at (x_{t-1}, y_{i,t-1}) on them.  y_{i,t-1}
//    is the task's y one step before, decayed like the rest.
//  * Step sizes.  By default constant b, b_d and step sizes (Theorem 2's
//    eta_t = tau_t = eta, chosen for a target accuracy epsilon, and its
//    constant betas ~ eta^2).  rsvrb_decay = q > 0 decays them (ours, not
//    Alg. 2's theorem: the paper proves RSVRB at a constant eta and, under
//    PL, RE-RSVRB (Alg. 3, Thm 3, its App. E.2 runs) restarts it with eta
//    shrunk by 1/sqrt(2) per stage of doubled length, i.e. eta ~ t^-1/2,
//    betas ~ 1/t; the per-step schedule is SVRB's, Thm 1: eta_t = tau_t =
//    c/(c0+t)^(1/3), betas ~ eta_t^2): s_t = ((c0+1)/(c0+t))^q (c0 =
//    rsvrb_offset), gamma_t = gamma s_t, alpha_t = alpha s_t, b_t =
//    (1 - momentum) s_t^2, b_d,t = (1 - task_momentum) s_t^2; s_1 = 1, so
//    the options mean at step 1 what they mean at constant steps (the
//    paper's c and beta constants are folded into them).  q = 1/3 is
//    Thm 1's exponent, q = 1/2 RE-RSVRB's envelope.  Off by default:
//    bench/EXPERIMENTS.md section 15 ("RSVRB's variance").
//    alpha = options.alpha (tau_t tau), or 1/L_g1 on the task's batches
//    when alpha_auto (a per-task constant), times s_t; gamma =
//    options.gamma (eta_t gamma), times s_t.
//  * The y-step of task i is alpha p_i (rsvrb_scaled_alpha, the default;
//    p_i the probability of the step that sampled it, kept with the step in
//    meta[1] for the skipped steps).  Line 15 moves y_i at every step,
//    sampled or not, the unsampled ones on its stale v (decayed by 1 - b
//    only): ~1/p_i y-steps per sample.  At alpha = 1/L_g1 (our automatic
//    step; the theorem's tau_t tau = eta tau <= eta / (3 L_g) is far
//    smaller) they add up to ~min(1/p_i, 1/b) steps of 1/L_g1 along one
//    stale direction, and y_i overshoots; with alpha p_i they add up to
//    about one.  For uniform sampling this is only a smaller tau, within
//    Theorem 2's conditions; measured in bench/EXPERIMENTS.md section 15,
//    where this, not the estimators' variance, was the wandering's main
//    cause.
//  * Y_i = R^{d2} (the families' lower problems are unconstrained), so line
//    15's projection is the identity and the step is y - alpha v.
//  * Projections as svrb (C_fx = grad_fx_clip, C_fy = grad_fy_clip, C =
//    jacobian_clip, lambda = hessian_floor); the estimators are stored
//    projected.  The same explicit-size guard as svrb (max_explicit_dim).
//  * residual_y in the report: the mean over the step's tasks of
//    ||grad_y g_i(x_t, y_{i,t+1}; zeta)||.
// Per-task state (TaskTable blocks, see rsvrb.h) costs d1 (d2 + 2) +
// d2 (d2 + 4) + 2 doubles per touched task.
#include "core/multitask/rsvrb.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/bilevel/hypergradients/svrb_estimators.h"
#include "core/hypergradients/row_sampler.h"
#include "core/multitask/rsvrb_schedule.h"

namespace f2obo {
namespace {

// sum_{j=1..k} keep^j, keep in [0, 1).
double GeometricSum(double keep, double k) {
  if (k <= 0) return 0.0;
  return keep * (1.0 - std::pow(keep, k)) / (1.0 - keep);
}

class Rsvrb final : public MultitaskAlgorithm {
 public:
  explicit Rsvrb(const MultitaskAlgorithmContext& ctx)
      : o_(ctx.options),
        schedule_(ctx.options),
        set_(ctx.constraint),
        d1_(ctx.x_dim),
        d2_(ctx.y_dim),
        m_(ctx.tasks),
        y0_(ctx.y0),
        cur_(d1_, d2_),
        prev_(d1_, d2_),
        oracle_(d1_, d2_),
        combine_(d1_, d2_),
        eig_(d2_),
        sym_(d2_, d2_),
        raised_(d2_),
        tmp_(d2_),
        hw_(d2_),
        jh_(d1_),
        y_prev_(d2_),
        z_jt_(d1_),
        z_jt1_(d1_),
        gy_res_(d2_) {}

  std::vector<int> GlobalLayout() const override { return {d1_, d1_}; }
  std::vector<int> TaskLayout() const override {
    return {d2_, d1_, d2_, d2_, d1_ * d2_, d2_ * d2_, d1_, 2};
  }
  std::vector<Vector> InitialGlobals(const VecIn& x1) const override {
    return {Vector(x1), Vector::Zero(d1_)};
  }
  std::vector<Vector> InitialTaskBlock() const override {
    std::vector<Vector> block = {y0_, y0_};
    for (int size : {d1_, d2_, d2_, d1_ * d2_, d2_ * d2_, d1_, 2}) {
      block.push_back(Vector::Zero(size));
    }
    return block;
  }
  absl::Status ValidateTaskState(const SessionState& s, const TaskTable& table) const override {
    if (absl::Status st = CheckLastUpdateSteps(s, table, kRsvrbMeta); !st.ok()) return st;
    for (int slot = 0; slot < table.touched(s); ++slot) {
      if (!(table.Var(s, slot, kRsvrbMeta)[1] > 0.0)) {
        return absl::InvalidArgumentError(
            absl::StrCat(table.Where(slot, kRsvrbMeta, 1), ": the y-step of task ",
                         table.task_at(s, slot), "'s last update must be > 0"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Round(const StepData& data, MultitaskFamily& family, const TaskTable& table,
                     SessionState* s, MultitaskReport* report) override {
    const int64_t t = s->t;
    const int k = static_cast<int>(data.tasks.size());
    const double step = schedule_.Step(t), keep = schedule_.Keep(t);
    const double gamma = o_.gamma * step;
    // Lines 10-11 (drawn first, see above): j_t and z_{j,t}.
    const int j = m_ > 1 ? static_cast<int>(s->rng.UniformBelow(m_)) : 0;
    int64_t j_last = 0;  // step of j's last update before this round (0: never)
    if (const int slot = table.Find(*s, j); slot >= 0) {
      j_last = static_cast<int64_t>(table.Var(*s, slot, kRsvrbMeta)[0]);
      if (t - 1 - j_last == 0) {
        z_jt_ = table.Var(*s, slot, kRsvrbZ);  // computed by line 9 at step t - 1
      } else {
        table.Load(*s, slot, &block_j_);
        DecayedZ(block_j_, t - 1, &z_jt_);
      }
    } else {
      z_jt_.setZero();
    }

    bool j_sampled = false;
    double residual_sum = 0.0;
    int64_t rows = 0;
    for (const TaskData& td : data.tasks) {
      if (absl::Status st = ContinueRound(); !st.ok()) return st;
      int slot = table.Find(*s, td.task);
      const bool first = slot < 0;
      if (first) {
        slot = table.Insert(s, td.task, InitialTaskBlock());
        ++report->new_tasks;
      }
      // The task's vectors, worked on in block_ and stored back at the end.
      table.Load(*s, slot, &block_);
      if (!first) CatchUp(t);
      j_sampled = j_sampled || td.task == j;
      const Vector& x_prev = table.Global(*s, kRsvrbXPrev);
      const double p = TaskProbability(td, k, m_), scale = 1.0 / p;
      BilevelFamily& f = family.Task(td.task, td.data);
      Vector& y = block_[kRsvrbY];
      Vector& y_prev = block_[kRsvrbYPrev];
      const double alpha = InnerStepSize(o_, f, s->x, y, td.data, &scratch_) * step *
                           (o_.rsvrb_scaled_alpha ? p : 1.0);
      sampler_.Reserve(td.data);
      const BatchView xi = sampler_.DrawUpper(td.data.upper, o_.sample_rows, &s->rng);
      const BatchView zeta = sampler_.DrawInner(td.data.inner, o_.sample_rows, &s->rng);
      rows += oracle_.Evaluate(f, s->x, y, xi, zeta, &cur_);
      SvrbEstimators e = Estimators();
      if (first) {
        SvrbStart(cur_, &e);
      } else {
        rows += oracle_.Evaluate(f, x_prev, y_prev, xi, zeta, &prev_);
        SvrbStorm(cur_, prev_, keep, scale, &e);
      }
      Vector& z = block_[kRsvrbZ];
      if (absl::Status st =
              SvrbProjectAndCombine(o_.grad_fx_clip, o_.grad_fy_clip, o_.jacobian_clip,
                                    o_.hessian_floor, "rsvrb", &e, &combine_, &z);
          !st.ok()) {
        return absl::Status(st.code(), absl::StrCat("task ", td.task, ": ", st.message()));
      }
      y_prev = y;
      y.noalias() -= alpha * e.v;
      Vector& meta = block_[kRsvrbMeta];
      meta[0] = static_cast<double>(t);
      meta[1] = alpha;
      f.G(s->x, y, zeta, nullptr, &gy_res_);
      residual_sum += gy_res_.norm();
      rows += zeta.rows.n;
      report->alpha = alpha;
      report->batch_size = zeta.rows.n;
      report->hyper_batch_size = xi.rows.n;
      table.Store(s, slot, block_);
    }

    // Line 12: z_{j,t+1}; line 13: d.
    if (j_sampled) {
      z_jt1_ = table.Var(*s, table.Find(*s, j), kRsvrbZ);
    } else if (j_last > 0) {
      table.Load(*s, table.Find(*s, j), &block_j_);
      DecayedZ(block_j_, t, &z_jt1_);
    } else {
      z_jt1_.setZero();
    }
    Vector& d = table.Global(s, kRsvrbD);
    d -= z_jt_;
    d *= schedule_.TaskKeep(t);
    d += z_jt1_;
    // Line 14.
    table.Global(s, kRsvrbXPrev) = s->x;
    ProjectedStep(set_, gamma, d, &s->x);

    report->tasks = k;
    report->tasks_touched = table.touched(*s);
    report->d_task = j;
    report->gamma = gamma;
    report->y_iterations = 1;
    report->residual_y = residual_sum / k;
    report->direction = d;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  // The estimators of the task in block_.
  SvrbEstimators Estimators() {
    return SvrbEstimators(block_[kRsvrbU], block_[kRsvrbW], block_[kRsvrbV], block_[kRsvrbJ],
                          block_[kRsvrbH], d1_, d2_);
  }

  // The eigendecomposition of the stored H's symmetric part (into eig_).
  void Decompose(const Vector& h) {
    const Eigen::Map<const Matrix> hm(h.data(), d2_, d2_);
    sym_ = hm;
    sym_ += hm.transpose();
    sym_ *= 0.5;
    eig_.compute(sym_, Eigen::ComputeEigenvectors);
  }

  // raised_ = max(c l_i, lambda) for the eigenvalues l of the last Decompose.
  void DecayedEigenvalues(double c) {
    const Vector& l = eig_.eigenvalues();
    for (Eigen::Index i = 0; i < l.size(); ++i) raised_[i] = std::max(c * l[i], o_.hessian_floor);
  }

  // z of a task (its `block`) after the unsampled steps from its last
  // update's next through `through` (lines 9, 11, 12 on the decayed
  // estimators), without data.
  void DecayedZ(const std::vector<Vector>& block, int64_t through, Vector* out) {
    const int64_t last = static_cast<int64_t>(block[kRsvrbMeta][0]);
    const double c = schedule_.decaying()
                         ? schedule_.Skipped(last + 1, through).keep
                         : std::pow(o_.momentum, static_cast<double>(through - last));
    Decompose(block[kRsvrbH]);
    DecayedEigenvalues(c);
    // H_c^{-1} (c w) = Q diag(1 / raised) Q^T (c w)
    tmp_.noalias() = eig_.eigenvectors().transpose() * block[kRsvrbW];
    tmp_ *= c;
    tmp_.array() /= raised_.array();
    hw_.noalias() = eig_.eigenvectors() * tmp_;
    jh_.noalias() = Eigen::Map<const Matrix>(block[kRsvrbJ].data(), d1_, d2_) * hw_;
    *out = c * block[kRsvrbU] - c * jh_;
  }

  // Brings the task sampled at step t in block_ from its values after its
  // last update s to those at step t, k = t - 1 - s >= 0 unsampled steps
  // later, and sets y_prev to y_{t-1} (nothing to do when k = 0: y_prev
  // already is y_{t-1}).
  void CatchUp(int64_t t) {
    const int64_t s = static_cast<int64_t>(block_[kRsvrbMeta][0]);
    const double k = static_cast<double>(t - 1 - s);
    if (k <= 0) return;
    const double alpha = block_[kRsvrbMeta][1];
    double c, y_weight, y_weight_prev;
    if (schedule_.decaying()) {
      // alpha was alpha_s = alpha_base s_s: step j's is alpha_s s_j / s_s.
      const RsvrbSchedule::Decay decay = schedule_.Skipped(s + 1, t - 1);
      const double per_step = alpha / schedule_.Step(s);
      c = decay.keep;
      y_weight = per_step * decay.y_weight;
      y_weight_prev = per_step * decay.y_weight_before_last;
    } else {
      const double keep = o_.momentum;
      c = std::pow(keep, k);
      y_weight = alpha * GeometricSum(keep, k);
      y_weight_prev = alpha * GeometricSum(keep, k - 1);
    }
    Vector& y = block_[kRsvrbY];
    Vector& v = block_[kRsvrbV];
    y_prev_ = y;
    y_prev_.noalias() -= y_weight_prev * v;
    block_[kRsvrbYPrev] = y_prev_;
    y.noalias() -= y_weight * v;
    v *= c;
    block_[kRsvrbU] *= c;
    block_[kRsvrbW] *= c;
    block_[kRsvrbJ] *= c;
    Vector& h = block_[kRsvrbH];
    Decompose(h);
    DecayedEigenvalues(c);
    Eigen::Map<Matrix> hm(h.data(), d2_, d2_);
    hm.noalias() = eig_.eigenvectors() * raised_.asDiagonal() * eig_.eigenvectors().transpose();
  }

  AlgorithmOptions o_;
  RsvrbSchedule schedule_;
  ConstraintSet set_;
  int d1_, d2_, m_;
  Vector y0_;
  SvrbDerivatives cur_, prev_;
  SvrbOracle oracle_;
  SvrbCombineWorkspace combine_;
  Eigen::SelfAdjointEigenSolver<Matrix> eig_;
  Matrix sym_;
  Vector raised_, tmp_, hw_, jh_, y_prev_, z_jt_, z_jt1_, gy_res_;
  // A sampled task's vectors (TaskTable::Load) and j_t's.
  std::vector<Vector> block_, block_j_;
  BilevelReport scratch_;
  RowSampler sampler_;
};

// momentum 1 - b = 0.99, not svrb's 0.9: Theorem 2's betas are ~ eta^2, and its eta^2
// ~ m / C(p), i.e. ~ p for uniform sampling: a task's estimator, updated at
// rate p, then weighs its new derivatives as svrb's does per update
// (b / p = 0.09 at the suite's p = 1/9).  Measured: bench/EXPERIMENTS.md
// section 15.
// gamma: the fixed 0.001 (the automatic step is the bilevel class's).
void Defaults(AlgorithmOptions* o) {
  o->momentum = 0.99;
  o->gamma = kMultitaskDefaultGamma;
}

absl::StatusOr<std::unique_ptr<MultitaskAlgorithm>> Create(const MultitaskAlgorithmContext& ctx) {
  if (absl::Status s = CheckExplicitDims("rsvrb", ctx.options.max_explicit_dim, ctx.x_dim,
                                         ctx.y_dim, " per task", "mt_f2obo");
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<MultitaskAlgorithm>(new Rsvrb(ctx));
}

}  // namespace

const MultitaskAlgorithmEntry& RsvrbAlgorithm() {
  static const MultitaskAlgorithmEntry entry{
      {"rsvrb", ProblemClass::kMultitaskBilevel,
       "RSVRB (Guo, Hu, Zhang & Yang, Alg. 2): SVRB estimators per sampled task by "
       "randomized-coordinate STORM, lazy decay of the others, STORM estimate of grad F",
       BaselineRoundOptions().Add({Opt::momentum, Opt::task_momentum, Opt::rsvrb_decay,
                                   Opt::rsvrb_offset, Opt::rsvrb_scaled_alpha, Opt::sample_rows,
                                   Opt::max_explicit_dim, Opt::jacobian_clip, Opt::hessian_floor,
                                   Opt::grad_fy_clip, Opt::grad_fx_clip}),
       &Defaults, &CheckFixedUpperStep, nullptr},
      &Create};
  return entry;
}

}  // namespace f2obo
