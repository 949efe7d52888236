// The simple bilevel class's algorithms (SPEC section 9), in registration
// order: one line per algorithm.
#include "core/simple/algorithms/agm_bio.h"
#include "core/simple/algorithms/ir_fscg.h"
#include "core/simple/algorithms/ir_scg.h"
#include "core/simple/simple_registries.h"

namespace f2obo {

const std::vector<const SimpleAlgorithmEntry*>& SimpleAlgorithms() {
  static const auto* entries = new std::vector<const SimpleAlgorithmEntry*>{
      &IrScgAlgorithm(),
      &IrFscgAlgorithm(),
      &AgmBioAlgorithm(),
  };
  return *entries;
}

const SimpleAlgorithmEntry* FindSimpleAlgorithm(absl::string_view name) {
  for (const SimpleAlgorithmEntry* e : SimpleAlgorithms()) {
    if (name == e->info.name) return e;
  }
  return nullptr;
}

}  // namespace f2obo
