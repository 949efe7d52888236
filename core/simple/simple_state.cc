#include "core/simple/simple_state.h"

namespace f2obo {

StateLayout SimpleLayout(int x_dim) {
  return StateLayout{{{"decision", x_dim}},
                     {},
                     {{"inner_gap"},
                      {"outer_gap"},
                      {"outer_gap_steps", true},
                      {"unconverged_steps", true},
                      {"skipped_steps", false, true},
                      {"inner_gap_estimate"},
                      {"inner_gap_estimate_variance"}}};
}

SimpleVars SimpleView(SessionState* s) {
  return SimpleVars{s->t, s->x, s->vectors[kSimpleDecision], s->rng, s->aux};
}

}  // namespace f2obo
