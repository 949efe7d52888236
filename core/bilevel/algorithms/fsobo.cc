// FSOBO: T. Jia, H. Wang, C. Chen, "Achieving better local regret bound for
// online non-convex bilevel optimization", arXiv:2602.06457 (2026);
// reference [14] of the F2OBO paper (Table 1: O(T) gradient and HVP
// queries, fully single loop).  Per step t, from y_t and v_t:
//   y_{t+1} = y_t - alpha grad_y g_t(x_t, y_t)
//   v_{t+1} = v_t - eta (grad2_yy g_t(x_t, y_{t+1}) v_t - grad_y f_t(x_t, y_{t+1}))
//   h_t = grad_x f_t(x_t, y_{t+1}) - grad2_xy g_t(x_t, y_{t+1}) v_{t+1}
//   x_{t+1} = P_X(x_t - gamma h_t)
// Choices where the source leaves room:
//  * Order: sequential (Gauss-Seidel) - the v-step and h_t use the updated
//    y_{t+1} and v_{t+1}, as AOBO and SOBOW do after their loops; this is
//    AOBO's round with one inner step and M = 1.
//  * eta = options.linear_system_step (0.1), v_1 = 0.
//  * inner_steps and linear_system_steps default to 1 and must stay 1
//    (its registry check), so a request cannot silently expect more.
// residual_y = ||grad_y g_t(x_t, y_{t+1})|| costs one extra gradient pass.
// aux layout: [0] v (d2).
#include "core/bilevel/algorithms/fsobo.h"

#include <vector>

#include "core/bilevel/algorithms/aid_baseline.h"
#include "core/bilevel/hypergradients/first_order.h"
#include "core/bilevel/hypergradients/second_order.h"

namespace f2obo {
namespace {

class Fsobo final : public AidBaseline {
 public:
  explicit Fsobo(const BilevelAlgorithmContext& ctx) : AidBaseline(ctx) {}

  absl::Status Round(const StepData& data, BilevelFamily& family, BilevelVars* s,
                     BilevelReport* report) override {
    const double alpha = InnerStepSize(o_, family, s->x, s->y, data, report);
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    family.G(s->x, s->y, inner, nullptr, &ws_.gy_g);
    s->y.noalias() -= alpha * ws_.gy_g;
    int64_t rows = inner.rows.n;
    rows += ResidualY(family, s->x, s->y, inner, &ws_, report);
    if (absl::Status st = Hypergradient(family, s, upper, inner, 1, &rows); !st.ok()) return st;
    StepAndReport(ws_.h, 1, rows, s, report);
    return absl::OkStatus();
  }
};

void Defaults(AlgorithmOptions* o) {
  o->inner_steps = 1;
  o->linear_system_steps = 1;
}

absl::Status Check(const AlgorithmOptions& o) {
  if (o.inner_steps != 1) {
    return absl::InvalidArgumentError(
        "options.inner_steps: fsobo is fully single-loop, K must be 1");
  }
  if (o.linear_system_steps != 1) {
    return absl::InvalidArgumentError(
        "options.linear_system_steps: fsobo is fully single-loop, M must be 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BilevelAlgorithm>> Create(const BilevelAlgorithmContext& ctx) {
  return std::unique_ptr<BilevelAlgorithm>(new Fsobo(ctx));
}

}  // namespace

const BilevelAlgorithmEntry& FsoboAlgorithm() {
  static const BilevelAlgorithmEntry entry{
      {"fsobo", ProblemClass::kBilevel,
       "FSOBO (Jia et al.): fully single loop, one inner and one linear-system step",
       BaselineRoundOptions().Add(
           {Opt::inner_steps, Opt::linear_system_steps, Opt::linear_system_step}),
       &Defaults, &Check, nullptr},
      &Create};
  return entry;
}

}  // namespace f2obo
