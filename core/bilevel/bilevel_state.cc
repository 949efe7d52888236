#include "core/bilevel/bilevel_state.h"

namespace f2obo {

StateLayout BilevelLayout(int y_dim) {
  return StateLayout{{{"y", y_dim}, {"z", y_dim}},
                     {"lambda"},
                     {{"blreg"},
                      {"variation"},
                      {"drift"},
                      {"drift_steps", true},
                      {"unconverged_steps", true},
                      {"unconverged_drift_steps", true},
                      {"skipped_steps", false, true},
                      {"blreg_estimate"},
                      {"blreg_estimate_variance"}}};
}

BilevelVars BilevelView(SessionState* s) {
  return BilevelVars{
      s->t,   s->x,  s->vectors[kBilevelY], s->vectors[kBilevelZ], s->scalars[kBilevelLambda],
      s->rng, s->aux};
}

ConstBilevelVars BilevelView(const SessionState& s) {
  return ConstBilevelVars{s.t, s.x, s.vectors[kBilevelY], s.vectors[kBilevelZ],
                          s.scalars[kBilevelLambda]};
}

}  // namespace f2obo
