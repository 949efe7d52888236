// SVRB: Z. Guo, T. Yang, "Randomized stochastic variance-reduced methods for
// multi-task stochastic bilevel optimization", arXiv:2105.02266 (2021), the
// single-task method (SVRB; its multi-task variant RSVRB is SPEC section 9).
// Every derivative in the hypergradient
//   grad F = grad_x f - grad2_xy g [grad2_yy g]^{-1} grad_y f
// gets its own STORM estimator (Cutkosky & Orabona 2019): for a derivative
// q(x, y; sample) and a = 1 - options.momentum,
//   d_t = q(x_t, y_t; s_t) + (1 - a) (d_{t-1} - q(x_{t-1}, y_{t-1}; s_t)),
// both terms on the SAME sample s_t of step t.  Per step t, from (x_t, y_t),
// the previous iterate (x_{t-1}, y_{t-1}) and the estimators:
//   draw xi (B upper rows) and zeta (B inner rows)
//   u_t = STORM of grad_x f   on xi     (d1)
//   w_t = STORM of grad_y f   on xi     (d2)
//   v_t = STORM of grad_y g   on zeta   (d2)
//   J_t = S^u_C[STORM of grad2_xy g on zeta]        (d1 x d2)
//   H_t = S^l_lambda[STORM of grad2_yy g on zeta]   (d2 x d2)
//   h_t = u_t - J_t H_t^{-1} w_t
//   y_{t+1} = y_t - alpha v_t,   x_{t+1} = P_X(x_t - gamma h_t)
// with S^u_C(J) = U diag(min(sigma, C)) V^T (C = options.jacobian_clip) and
// S^l_lambda(H) = Q diag(max(l, lambda)) Q^T of the symmetric part (lambda =
// options.hessian_floor): the Euclidean projections onto {||J||_2 <= C} and
// {H symmetric, H >= lambda I}, which keep H_t invertible and H_t^{-1}
// bounded by 1/lambda.  At t = 1 (or on a fresh aux) every d_1 = q(x_1, y_1; s_1).
// The matrices are built column by column from the family's HVPs:
// column j of grad2_xy g is HvpXYG(e_j), of grad2_yy g is HvpYYG(e_j); that
// is 2 d2 HVP passes per point, two points per round.
// Choices where the source leaves room:
//  * Online indexing: the source's iteration t+1 samples after moving; here
//    step t's round samples step t's batches and evaluates the corrections at
//    the previous iterate on them, so the correction also carries the drift
//    between f_{t-1}, g_{t-1} and f_t, g_t (there is no other data to use).
//  * The grad_y f estimate w is projected onto {||w|| <= C_fy} (Alg. 1
//    line 4) with C_fy = options.grad_fy_clip; its default is infinite (no
//    projection), since C_fy is a bound on ||grad_y f|| the service cannot
//    know; the u and v estimates are not projected (Alg. 1 leaves them
//    unprojected too).
//  * One STORM weight a for all five estimators (the source allows one per
//    estimator); a = 1 - options.momentum, default momentum 0.9 (a = 0.1).
//  * The projections wrap the STORM update and the projected matrix is what
//    the next round continues from (the estimator is stored projected).
//  * H_t^{-1} w_t is applied through the eigendecomposition computed by the
//    projection (no second factorization); the symmetric part (H + H^T)/2 is
//    projected, so H_t is symmetric up to rounding.
//  * Mini-batches: B = options.sample_rows (default 64) for xi and zeta,
//    capped at the batch's rows, drawn from state.rng in the order xi, zeta
//    (see RowSampler); families without sample rows are used whole.
//  * alpha = options.alpha, or 1/L_g1 when alpha_auto (InnerStepSize).
//  * residual_y = ||grad_y g_t(x_t, y_{t+1}; zeta)|| (one extra pass).
//  * Size limit: x_dim and y_dim must be <= options.max_explicit_dim
//    (default 256), checked when the session is created: the round costs
//    O(d2 (d1 + d2)) memory and an O(d2^3 + d1 d2 min(d1, d2)) SVD and
//    eigendecomposition, and the checkpoint carries J_t and H_t.
// aux layout: [0] u (d1), [1] w (d2), [2] v (d2), [3] J (d1 d2, column-major),
// [4] H (d2 d2, column-major), [5] x_{t-1} (d1), [6] y_{t-1} (d2).
#include "core/bilevel/algorithms/svrb.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"
#include "core/bilevel/hypergradients/svrb_estimators.h"
#include "core/bilevel/hypergradients/upper_step.h"

namespace f2obo {

namespace {

class Svrb final : public BilevelAlgorithm {
 public:
  explicit Svrb(const BilevelAlgorithmContext& ctx)
      : o_(ctx.options),
        d1_(ctx.x_dim),
        d2_(ctx.y_dim),
        cur_(d1_, d2_),
        prev_(d1_, d2_),
        oracle_(d1_, d2_),
        combine_(d1_, d2_),
        h_(d1_),
        gy_res_(d2_),
        aux_layout_{d1_, d2_, d2_, d1_ * d2_, d2_ * d2_, d1_, d2_},
        upper_step_(ctx.options, ctx.constraint, ctx.x_dim, aux_layout_.size()) {}

  std::vector<int> AuxLayout() const override {
    std::vector<int> sizes = aux_layout_;
    upper_step_.AppendLayout(&sizes);
    return sizes;
  }

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    sampler_.Reserve(data);
    const BatchView xi = sampler_.DrawUpper(data.upper, o_.sample_rows, &s->rng);
    const BatchView zeta = sampler_.DrawInner(data.inner, o_.sample_rows, &s->rng);
    const bool first = EnsureAux(aux_layout_, s);
    StateParts& aux = s->aux;
    int64_t rows = oracle_.Evaluate(family, s->x, s->y, xi, zeta, &cur_);

    SvrbEstimators e(aux[0], aux[1], aux[2], aux[3], aux[4], d1_, d2_);
    if (first) {
      SvrbStart(cur_, &e);
    } else {
      rows += oracle_.Evaluate(family, aux[5], aux[6], xi, zeta, &prev_);
      SvrbStorm(cur_, prev_, o_.momentum, 1.0, &e);  // keep = 1 - a
    }
    // Alg. 1 line 4: w_{t+1} = Pi_{C_fy}[...], the Euclidean projection onto
    // the ball of radius C_fy (no projection when C_fy is infinite); u is
    // not projected (kInfinity).
    if (absl::Status st = SvrbProjectAndCombine(kInfinity, o_.grad_fy_clip, o_.jacobian_clip,
                                                o_.hessian_floor, "svrb", &e, &combine_, &h_);
        !st.ok()) {
      return st;
    }

    aux[5] = s->x;
    aux[6] = s->y;
    s->y.noalias() -= alpha * e.v;
    report->gamma = upper_step_.Step(h_, s->t, &s->aux, &s->x);
    family.G(aux[5], s->y, zeta, nullptr, &gy_res_);
    report->residual_y = gy_res_.norm();
    rows += zeta.rows.n;

    report->hypergradient = h_;
    report->y_iterations = 1;
    report->batch_size = zeta.rows.n;
    report->hyper_batch_size = xi.rows.n;
    report->rows_processed = rows;
    return absl::OkStatus();
  }

 private:
  AlgorithmOptions o_;
  int d1_, d2_;
  SvrbDerivatives cur_, prev_;
  SvrbOracle oracle_;
  SvrbCombineWorkspace combine_;
  Vector h_, gy_res_;
  std::vector<int> aux_layout_;
  UpperStep upper_step_;
  RowSampler sampler_;
};

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  if (absl::Status s = CheckExplicitDims("svrb", ctx.options.max_explicit_dim, ctx.x_dim, ctx.y_dim,
                                         "", "a Hessian-free algorithm");
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<BilevelAlgorithm>(new Svrb(ctx));
}

}  // namespace

const BilevelAlgorithmEntry& SvrbAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"svrb", ProblemClass::kBilevel,
       "SVRB (Guo & Yang, single task): STORM estimators of every derivative, explicit matrices",
       BaselineRoundOptions().Add({Opt::momentum, Opt::sample_rows, Opt::max_explicit_dim,
                                   Opt::jacobian_clip, Opt::hessian_floor, Opt::grad_fy_clip}),
       nullptr, nullptr, nullptr},
      &Create};
  return entry;
}

}  // namespace f2obo
