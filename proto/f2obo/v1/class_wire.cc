#include "f2obo/v1/class_wire.h"

#include <vector>

namespace f2obo {

const ClassWire& WireOf(ProblemClass c) {
  static const auto* wires = new std::vector<const ClassWire*>{&BilevelWire(), &SimpleWire()};
  return *(*wires)[static_cast<size_t>(c)];
}

}  // namespace f2obo
