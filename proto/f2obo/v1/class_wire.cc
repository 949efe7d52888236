#include "f2obo/v1/class_wire.h"

#include <vector>

namespace f2obo {

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

}  // namespace f2obo
