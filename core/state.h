// The mutable part of a session: everything a round reads and writes, and
// everything a checkpoint must hold to continue bit-identically.
// Immutable configuration (family, algorithm options, X) lives in
// SessionConfig (core/session.h).
#ifndef F2OBO_CORE_STATE_H_
#define F2OBO_CORE_STATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/rng.h"
#include "core/types.h"

namespace f2obo {

// Running sums of the exact metrics (SPEC section 5) over the steps at which
// they were evaluated (every step, or every N-th under a sampling policy).
// Terms whose solves did not converge are counted, not summed (see
// Accumulate in core/metrics/exact_metrics.h).
struct RunningMetrics {
  int64_t evaluated_steps = 0;
  double blreg = 0.0;        // sum of regret terms r_s (paper Eq. 2)
  double variation = 0.0;    // sum of v_s: trajectory estimate of V_T
  double drift = 0.0;        // sum of d_s: trajectory estimate of H_2,T
  int64_t drift_steps = 0;   // steps whose v_s, d_s were available
  // Of evaluated_steps, those whose r_s was left out of blreg; of
  // drift_steps, those whose v_s, d_s were left out of variation and drift.
  int64_t unconverged_steps = 0;
  int64_t unconverged_drift_steps = 0;
};

struct SessionState {
  int64_t t = 1;        // index of the next step to apply (paper's t)
  Vector x;             // x_t, the current decision
  Vector y;             // y_t, warm start of the y-loop (approximates y*_lambda)
  Vector z;             // z_t, warm start of the z-loop (approximates y*)
  double lambda = 0.0;  // lambda_t, the penalty multiplier for step t
  Rng rng;              // SF2OBO's sampler
  int64_t inner_iterations = 0;  // total over all rounds
  int64_t cap_hits = 0;          // AF2OBO rounds that hit the iteration cap
  int64_t rows_processed = 0;    // sample rows read by rounds
  std::vector<Vector> aux;       // algorithm-owned (momentum, windows, ...)
  RunningMetrics metrics;

  // True iff every number a round may write is finite.
  bool AllFinite() const;
  // Bit-exact equality (NaN-safe: compares representations).
  bool BitEquals(const SessionState& o) const;
};

// Versioned little-endian binary encoding with an FNV-1a checksum; decoding
// rejects truncated, corrupt or future-version input.
std::string SerializeState(const SessionState& state);
absl::StatusOr<SessionState> DeserializeState(absl::string_view bytes);

// Whether a state that did not come from this process's own rounds (an
// import, a stored record) can be resumed by a session of these shapes:
// INVALID_ARGUMENT naming the first offending field otherwise.  Checks the
// shapes of x, y, z; finiteness; t in [1, 2^53] (t is used as a double in
// the schedules, exact only up to 2^53); a non-zero RNG state (xoshiro256**
// stays at zero forever from the all-zero state); and, when the algorithm
// reads it, a finite positive lambda.
absl::Status ValidateState(const SessionState& state, int x_dim, int y_dim, bool reads_lambda);

// The largest step index a state may carry (see ValidateState); a session
// at this index refuses further steps, so every state it saves stays
// restorable.
inline constexpr int64_t kMaxStepIndex = int64_t{1} << 53;

}  // namespace f2obo

#endif  // F2OBO_CORE_STATE_H_
