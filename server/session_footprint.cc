#include "server/session_footprint.h"

#include <algorithm>

#include "core/oracle.h"

namespace f2obo::server {

namespace {

// Sums and products of dimensions up to INT_MAX overflow int64 in the
// byte counts: computed in double (exact up to 2^53, then within 1e-16
// relative) and saturated.
int64_t Saturated(double v) {
  constexpr double kMax = 9.0e18;
  return v >= kMax ? static_cast<int64_t>(kMax) : static_cast<int64_t>(v);
}

}  // namespace

SessionFootprint EstimateFootprint(const FamilyConfig& f) {
  const auto dim = [](int v) { return static_cast<double>(std::max(v, 0)); };
  // Over the families (core/bilevel/families/*.h): x is quadratic's x_dim, one
  // entry per feature (ridge_hpo, logistic_hpo) or two per class
  // (loss_tuning); y is quadratic's y_dim or (features + 1) per class.
  const double x = dim(f.x_dim) + dim(f.features) + 2 * dim(f.classes);
  // A multi-task family (tasks > 0) holds a y and z per task once every
  // task is touched: counted for all m (per-task state is created lazily,
  // so this is the worst case, as every estimate here is).
  const double y = (dim(f.y_dim) + (dim(f.features) + 1) * std::max(dim(f.classes), 1.0)) *
                   std::max(dim(f.tasks), 1.0);
  const double state_doubles = x + 2 * y;  // x, y, z
  SessionFootprint out;
  out.x = Saturated(x);
  out.y = Saturated(y);
  out.record_bytes = Saturated(8 * state_doubles);
  if (IsOracleFamily(f.name)) {
    // Its scratch and buffers are freed between steps (core/session.h,
    // server/oracle_stream.h): docs/oracle-protocol.md, "Memory".
    out.memory_bytes = Saturated(8 * (3 * x + (kOracleIdleYCopies + kOracleStepYCopies) * y));
    return out;
  }
  // Three copies of the state (current, the round's scratch, the record
  // being committed) and one of x and y (a metrics job).
  out.memory_bytes = Saturated(8 * (3 * state_doubles + x + y));
  return out;
}

}  // namespace f2obo::server
