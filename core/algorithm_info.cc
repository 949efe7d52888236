#include "core/algorithm_info.h"

namespace f2obo {

AlgorithmOptions DefaultOptions(const AlgorithmInfo& info) {
  AlgorithmOptions o;
  if (info.defaults != nullptr) info.defaults(&o);
  return o;
}

absl::Status ValidateAlgorithmOptions(const AlgorithmInfo& info, const AlgorithmOptions& o) {
  if (absl::Status s = ValidateOptions(o, info.reads); !s.ok()) return s;
  return info.check != nullptr ? info.check(o) : absl::OkStatus();
}

}  // namespace f2obo
