// PZOBO / PZOBO-S: D. Sow, K. Ji, Y. Liang, "On the convergence theory for
// Hessian-free bilevel algorithms", NeurIPS 35 (2022), arXiv:2110.07004
// (Algorithm 1, PZOBO, and its stochastic version PZOBO-S); reference [31]
// of the F2OBO paper.  Per step t, from the warm start y^0 = y_t (the end of
// the previous round's main path):
//   main path:  y^{k+1} = y^k - alpha grad_y g_t(x_t, y^k; S_k), k = 0..N-1
//   for j = 1..Q:  u_j ~ N(0, I_d1)
//     perturbed path from the SAME y^0 over the SAME S_0..S_{N-1} at
//     x_t + mu u_j, ending at y^N_j;   delta_j = (y^N_j - y^N) / mu
//   h_t = grad_x f_t(x_t, y^N; D) + (1/Q) sum_j <delta_j, grad_y f_t(x_t, y^N; D)> u_j
//   x_{t+1} = P_X(x_t - gamma h_t),   y_{t+1} = y^N
// delta_j is a finite difference of the N-step map y^N(x) along u_j, so
// (1/Q) sum_j u_j delta_j^T estimates its Jacobian dy^N/dx (transposed) with
// Gaussian smoothing; h_t estimates the ITD hypergradient d/dx f(x, y^N(x))
// without any Hessian.  For g quadratic in (x, y) with Hessian H and
// grad_y g = H y - B x - c, every path is affine in x and
//   delta_j = J_N u_j exactly, J_N = [I - (I - alpha H)^N] H^{-1} B,
// for any mu (common start and mini-batches cancel everything else).
// PZOBO: S_k = D = the full step batches.  PZOBO-S: S_k are B-row draws from
// the inner batch, D a B-row draw from the upper batch.
// Choices where the source leaves room:
//  * N = options.inner_steps (default 5), Q = options.pz_directions
//    (default 10), mu = options.pz_smoothing (default 1e-4: a tenth of the
//    families' default mu_0 = 1e-3, see the next choice), B =
//    options.sample_rows (pzobo_s, default 64, capped at the batch's rows);
//    the F2OBO paper does not run PZOBO, so these are our defaults.
//  * Warm start: every path of step t starts from y_t, the end of the
//    previous round's main path, where Sow et al.'s Alg. 1 line 3 restarts
//    every outer iteration from the fixed initialization y_0.  Their outer
//    iterations all solve one fixed problem; on a stream each step has a
//    new g_t and only N GD steps, so a restart from y_0 would leave y^N
//    about as far from y*_t at every step as at the first, while carrying
//    y over lets the inner error contract across steps under slow drift, as
//    F2OBO's own rounds do (F2OBO paper Alg. 1 line 3, "warm start").  The
//    estimator is unchanged in kind: y_t does not depend on x_t, so delta_j
//    is still a finite difference of the N-step map from a common start
//    (the quadratic closed form above holds for any start).
//  * Randomness: round_seed = state.rng.Next() is the round's first draw;
//    u_1..u_Q are consecutive GaussianDirections(round_seed).Next() calls
//    (regenerated, never stored); PZOBO-S then draws S_0..S_{N-1} and D, in
//    that order, from state.rng (without replacement within a draw).  So a
//    restored checkpoint continues bit-identically.
//  * The perturbed points x_t + mu u_j are not projected onto X (a
//    projection would bias the smoothing estimator).  Families must be
//    defined there: on a box touching 0 (ridge_hpo, logistic_hpo) keep mu
//    small next to mu_0 so g stays strongly convex along the path.
//  * The perturbed paths use the same step size alpha as the main path
//    (alpha, or 1/L_g1 at (x_t, y_t) when alpha_auto).
//  * residual_y = ||grad_y g_t(x_t, y^N; S_{N-1})|| (one extra pass);
//    y_iterations = N (the main path; the Q perturbed paths are counted in
//    rows_processed, (Q + 1) N inner passes per round).
#include "core/bilevel/algorithms/pzobo.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/bilevel/hypergradients/upper_step.h"

namespace f2obo {

double GaussianDirections::Normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  constexpr double kUnit = 1.0 / 9007199254740992.0;                       // 2^-53
  const double u1 = static_cast<double>((rng_.Next() >> 11) + 1) * kUnit;  // (0, 1]
  const double u2 = static_cast<double>(rng_.Next() >> 11) * kUnit;        // [0, 1)
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(kTwoPi * u2);
  has_spare_ = true;
  return r * std::cos(kTwoPi * u2);
}

void GaussianDirections::Next(Vector* u) {
  for (Eigen::Index i = 0; i < u->size(); ++i) (*u)[i] = Normal();
}

absl::Status InnerPaths::Run(BilevelFamily& family, const VecIn& x, double alpha,
                             const BatchView* views, int n, Vector* y, RoundControl* control) {
  for (int k = 0; k < n; ++k) {
    if (absl::Status st = ContinueRound(control); !st.ok()) return st;
    family.G(x, *y, views[k], nullptr, &grad_);
    y->noalias() -= alpha * grad_;
  }
  return absl::OkStatus();
}

absl::Status InnerPaths::Delta(BilevelFamily& family, const VecIn& x, const VecIn& u, double mu,
                               double alpha, const VecIn& y0, const VecIn& y_n,
                               const BatchView* views, int n, Vector* delta,
                               RoundControl* control) {
  xp_.noalias() = x + mu * u;
  yp_ = y0;
  if (absl::Status st = Run(family, xp_, alpha, views, n, &yp_, control); !st.ok()) return st;
  delta->noalias() = (yp_ - y_n) / mu;
  return absl::OkStatus();
}

namespace {

class Pzobo final : public BilevelAlgorithm {
 public:
  explicit Pzobo(const BilevelAlgorithmContext& ctx)
      : o_(ctx.options),
        upper_step_(ctx.options, ctx.constraint, ctx.x_dim, /*slot=*/0),
        stochastic_(ctx.name == "pzobo_s"),
        paths_(ctx.x_dim, ctx.y_dim),
        y0_(ctx.y_dim),
        gx_f_(ctx.x_dim),
        gy_f_(ctx.y_dim),
        gy_g_(ctx.y_dim),
        u_(ctx.x_dim),
        delta_(ctx.y_dim),
        h_(ctx.x_dim),
        views_(o_.inner_steps),
        inner_idx_(stochastic_ ? o_.inner_steps : 0) {}

  std::vector<int> AuxLayout() const override {
    std::vector<int> sizes;
    upper_step_.AppendLayout(&sizes);
    return sizes;
  }

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const int n = o_.inner_steps, q = o_.pz_directions;
    const double mu = o_.pz_smoothing;
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    GaussianDirections directions(s->rng.Next());
    const BatchView upper = Draw(data, s);

    y0_ = s->y;
    // s->y = y^N
    if (absl::Status st = paths_.Run(family, s->x, alpha, views_.data(), n, &s->y, round_control());
        !st.ok()) {
      return st;
    }
    family.F(s->x, s->y, upper, &gx_f_, &gy_f_);
    h_.setZero();
    for (int j = 0; j < q; ++j) {
      directions.Next(&u_);
      if (absl::Status st = paths_.Delta(family, s->x, u_, mu, alpha, y0_, s->y, views_.data(), n,
                                         &delta_, round_control());
          !st.ok()) {
        return st;
      }
      h_.noalias() += delta_.dot(gy_f_) * u_;
    }
    h_ /= static_cast<double>(q);
    h_ += gx_f_;

    const BatchView& last = views_[n - 1];
    family.G(s->x, s->y, last, nullptr, &gy_g_);
    report->residual_y = gy_g_.norm();
    report->gamma = upper_step_.Step(h_, s->t, &s->aux, &s->x);

    int64_t path_rows = 0;
    for (const BatchView& v : views_) path_rows += v.rows.n;
    report->hypergradient = h_;
    report->y_iterations = n;
    report->batch_size = stochastic_ ? views_[0].rows.n : 0;
    report->hyper_batch_size = stochastic_ ? upper.rows.n : 0;
    report->rows_processed = static_cast<int64_t>(q + 1) * path_rows + upper.rows.n + last.rows.n;
    return absl::OkStatus();
  }

 private:
  // Fills views_ with S_0..S_{N-1} and returns D (see the header comment).
  BatchView Draw(const StepData& data, BilevelVars* s) {
    if (!stochastic_) {
      for (BatchView& v : views_) v = BatchView::All(data.inner);
      return BatchView::All(data.upper);
    }
    const int b = o_.sample_rows;
    const int n_in = data.inner.rows(), n_up = data.upper.rows();
    if (static_cast<int>(perm_.size()) < std::max(n_in, n_up)) {
      perm_.resize(std::max(n_in, n_up));
    }
    for (size_t k = 0; k < views_.size(); ++k) {
      views_[k] = DrawRows(data.inner, b, &inner_idx_[k], s);
    }
    return DrawRows(data.upper, b, &upper_idx_, s);
  }

  // A b-row draw without replacement; the whole batch (no randomness used)
  // when b >= its rows, as RowSampler does.
  BatchView DrawRows(const Batch& batch, int b, std::vector<int>* idx, BilevelVars* s) {
    const int rows = batch.rows();
    if (b >= rows) return BatchView::All(batch);
    if (static_cast<int>(idx->size()) < b) idx->resize(b);
    s->rng.SampleWithoutReplacement(rows, b, perm_.data(), idx->data());
    return BatchView{&batch, RowSet{idx->data(), b}};
  }

  AlgorithmOptions o_;
  UpperStep upper_step_;
  bool stochastic_;
  InnerPaths paths_;
  Vector y0_, gx_f_, gy_f_, gy_g_, u_, delta_, h_;
  std::vector<BatchView> views_;             // S_0..S_{N-1}
  std::vector<std::vector<int>> inner_idx_;  // pzobo_s: rows of each S_k
  std::vector<int> upper_idx_, perm_;
};

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Pzobo(ctx));
}

}  // namespace

const BilevelAlgorithmEntry& PzoboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"pzobo", ProblemClass::kBilevel,
       "PZOBO (Sow et al.): Hessian-free, Q perturbed inner paths estimate the Jacobian",
       BaselineRoundOptions().Add({Opt::inner_steps, Opt::pz_directions, Opt::pz_smoothing}),
       nullptr, nullptr, nullptr},
      &Create};
  return entry;
}

const BilevelAlgorithmEntry& PzoboSAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"pzobo_s", ProblemClass::kBilevel,
       "PZOBO-S (Sow et al.): PZOBO on sample_rows-row mini-batches",
       BaselineRoundOptions().Add(
           {Opt::inner_steps, Opt::pz_directions, Opt::pz_smoothing, Opt::sample_rows}),
       nullptr, nullptr, nullptr},
      &Create};
  return entry;
}

}  // namespace f2obo
