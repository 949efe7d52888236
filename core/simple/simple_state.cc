#include "core/simple/simple_state.h"

namespace f2obo {

StateLayout SimpleLayout(int x_dim) {
  return StateLayout{
      {{"decision", x_dim}},
      {},
      {{"inner_gap"}, {"outer_gap"}, {"outer_gap_steps", true}, {"unconverged_steps", true}}};
}

SimpleVars SimpleView(SessionState* s) {
  return SimpleVars{s->t, s->x, s->vectors[kSimpleDecision], s->rng, s->aux};
}

}  // namespace f2obo
