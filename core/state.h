// The mutable part of a session: everything a round reads and writes, and
// everything a checkpoint must hold to continue bit-identically.  Its shape
// is the problem class's (a StateLayout names the class's vectors, scalars
// and running-metric sums); the shared parts (step index, RNG, counters,
// algorithm-owned vectors, encoding, validation) are written once here.
// Immutable configuration (family, algorithm options, X) lives in
// SessionConfig (core/session.h).
#ifndef F2OBO_CORE_STATE_H_
#define F2OBO_CORE_STATE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/rng.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

// A running sum: its name and whether it counts steps (then a restored
// value must be a whole number between 0 and the evaluated steps; the wire
// carries counts as integers).
struct RunningSumSpec {
  std::string name;
  bool counts_steps = false;  // a count of evaluated steps (at most evaluated_steps)
  // A count of due steps without exact metrics (core/metrics/sampling.h):
  // with evaluated_steps at most the steps applied.
  bool counts_skipped = false;
};

// Names (and sizes) of a class's state variables, in their order in
// SessionState::vectors / scalars and RunningMetrics::sums.
struct StateLayout {
  std::vector<std::pair<std::string, int>> vectors;  // name, entries
  std::vector<std::string> scalars;
  std::vector<RunningSumSpec> sums;
};

struct SessionState {
  int64_t t = 1;                 // index of the next step to apply (paper's t)
  Vector x;                      // x_t, the iterate of the upper variable
  std::vector<Vector> vectors;   // the class's vector variables (bilevel: y, z)
  std::vector<double> scalars;   // the class's scalars (bilevel: lambda)
  Rng rng;                       // the session's sampler
  int64_t inner_iterations = 0;  // total over all rounds
  int64_t cap_hits = 0;          // rounds that stopped an inner loop at its cap
  int64_t rows_processed = 0;    // sample rows read by rounds
  StateParts aux;                // algorithm-owned (momentum, windows, ...), copy-on-write

  // The first variable holding a number that is not finite or exceeds
  // `bound` in magnitude, named after `layout` ("x", "y", "lambda",
  // "aux[2]"), or "" if there is none.  With `unchanged_since` (a state
  // this one was copied from, already checked), the aux parts it still
  // shares with it are not read again: a round's check costs what it wrote.
  std::string FirstOutOfRange(const StateLayout& layout, double bound,
                              const SessionState* unchanged_since = nullptr) const;
  // Bit-exact equality (NaN-safe: compares representations).
  bool BitEquals(const SessionState& o) const;
};

// Running sums of the exact metrics (SPEC section 5) over the steps at which
// they were evaluated; the class names the sums (StateLayout::sums).  Not
// part of SessionState: the metrics worker adds to them after the round.
struct RunningMetrics {
  int64_t evaluated_steps = 0;
  std::vector<double> sums;
  bool BitEquals(const RunningMetrics& o) const;
};

// What a stored or exported session holds besides its spec: the state, the
// running sums, and which family and algorithm wrote the state (so a state
// is never resumed by an algorithm of another layout).
struct Checkpoint {
  std::string family;     // empty in version-1 encodings
  std::string algorithm;  // empty in version-1 encodings
  SessionState state;
  RunningMetrics metrics;
  bool BitEquals(const Checkpoint& o) const {
    return family == o.family && algorithm == o.algorithm && state.BitEquals(o.state) &&
           metrics.BitEquals(o.metrics);
  }
};

// Versioned little-endian binary encoding with a checksum (WordHash,
// core/word_hash.h; versions 1-3 used FNV-1a and still decode); decoding
// rejects truncated, corrupt or future-version input.  Version 1 (the
// bilevel state before problem classes) and version 2 (version 1 with the
// unconverged-term counts) decode into the bilevel layout.
std::string SerializeCheckpoint(const Checkpoint& checkpoint);
absl::StatusOr<Checkpoint> DeserializeCheckpoint(absl::string_view bytes);

// The same state in parts, as the store keeps a session's current state so
// that a step writes what it changed: the head is the encoding
// above with no aux vectors; each aux vector is a part of its own, encoded
// as its numbers (little-endian doubles, no length: the part's size says
// it).  JoinCheckpoint puts them back together (parts[i] = aux[i]; empty
// bytes are an empty vector); it refuses a head that holds aux vectors.
std::string SerializeCheckpointHead(const Checkpoint& checkpoint);
// Either encoding of a checkpoint's fields, without copying the state.
std::string SerializeState(absl::string_view family, absl::string_view algorithm,
                           const SessionState& state, const RunningMetrics& metrics, bool with_aux);
std::string EncodeAuxPart(const Vector& v);
absl::StatusOr<Checkpoint> JoinCheckpoint(absl::string_view head,
                                          const std::vector<std::string>& parts);
// JoinCheckpoint one part at a time, so that a reader of many parts holds
// no more than one part's bytes besides the state (LoadAll at 1,000,000
// tasks): the head with `parts` empty aux vectors, then SetAuxPart for each
// stored part (DATA_LOSS "session state: aux part i ..." when its bytes are
// not whole doubles).
absl::StatusOr<Checkpoint> DeserializeCheckpointHead(absl::string_view head, size_t parts);
absl::Status SetAuxPart(size_t i, absl::string_view bytes, Checkpoint* checkpoint);
// Rewrites the checksum of an encoded state (of any version) to match its
// bytes: the fuzzer's way past the checksum to the decoder's later checks.
void ResealEncodedState(std::string* bytes);

// Whether a state that did not come from this process's own rounds (an
// import, a stored record) fits `layout` with x of `x_dim` entries:
// INVALID_ARGUMENT naming the first offending field otherwise.  Checks the
// shapes; that every number is finite and within `bound`; t in [1, 2^53]
// (t is used as a double in the schedules, exact only up to 2^53); and a
// non-zero RNG state (xoshiro256** stays at zero forever from the all-zero
// state).  The class checks the rest (Problem::ValidateRestored).
absl::Status ValidateState(const SessionState& state, const StateLayout& layout, int x_dim,
                           double bound);

// The largest step index a state may carry (see ValidateState); a session
// at this index refuses further steps, so every state it saves stays
// restorable.
inline constexpr int64_t kMaxStepIndex = int64_t{1} << 53;

}  // namespace f2obo

#endif  // F2OBO_CORE_STATE_H_
