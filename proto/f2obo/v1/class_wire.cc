#include "f2obo/v1/class_wire.h"

#include <vector>

namespace f2obo {

// One per class, each defined in its <class>_wire.cc.
const ClassWire& BilevelWire();
const ClassWire& SimpleWire();
const ClassWire& MultitaskWire();

// By id, not by position, like GetProblemClass: the classes' wires may be
// registered in another order than the enum's.
const ClassWire* WireOf(ProblemClass c) {
  static const auto* wires =
      new std::vector<const ClassWire*>{&BilevelWire(), &SimpleWire(), &MultitaskWire()};
  for (const ClassWire* w : *wires) {
    if (w->id == c) return w;
  }
  return nullptr;
}

void SampleRunning(const RunningMetrics& running, const SampleSlots& slots,
                   v1::RunningMetrics* out) {
  const auto sum = [&](int i) {
    return static_cast<size_t>(i) < running.sums.size() ? running.sums[i] : 0.0;
  };
  // A whole number in [0, steps applied] (Session::Restore).
  out->set_skipped_steps(static_cast<int64_t>(sum(slots.skipped_steps)));
  out->set_estimate(sum(slots.estimate));
  out->set_estimate_standard_error(StandardError(sum(slots.variance)));
}

}  // namespace f2obo
