#include "f2obo/v1/class_fields.h"

namespace f2obo::v1 {

std::optional<double> LambdaOf(const RoundReport& r) {
  if (r.has_bilevel()) return r.bilevel().lambda();
  if (r.has_multitask()) return r.multitask().lambda();
  return std::nullopt;
}

std::optional<double> LambdaOf(const SessionInfo& s) {
  if (s.has_bilevel()) return s.bilevel().lambda();
  if (s.has_multitask()) return s.multitask().lambda();
  return std::nullopt;
}

std::optional<double> BlregOf(const RunningMetrics& m) {
  if (m.has_bilevel()) return m.bilevel().blreg();
  if (m.has_multitask()) return m.multitask().blreg();
  return std::nullopt;
}

int32_t YDimOf(const SessionInfo& s) {
  if (s.has_bilevel()) return s.bilevel().y_dim();
  if (s.has_multitask()) return s.multitask().y_dim();
  return 0;
}

}  // namespace f2obo::v1
