// The fuzz harness behind step_fuzzer: one input = one hostile request pair
// (a session spec or an exported session, plus a step request), run through
// the server's own code: server::SessionManager (spec -> config conversion,
// validation and limits; Create / Import; Decode with the batch limits;
// Step with its exactly-once index check, Prepare and Commit; Export;
// Delete) and, next to it, a core f2obo::Session built from the same config
// that must agree with the manager bit for bit.  Invariants are checked
// after every operation.  Shared by the libFuzzer entry point
// (step_fuzzer.cc) and the seed-corpus generator (make_corpus.cc).
//
// Input framing (all of it arbitrary bytes to the fuzzer):
//   byte 0          mode (bits below)
//   bytes 1..2      n, little-endian (clamped to what is left)
//   next n bytes    v1::SessionSpec, or v1::SessionExport in import mode
//   the rest        v1::StepRequest (its upper and inner batches are used;
//                   session_id and t are replaced: the harness holds exactly
//                   one session and always steps its next index)
#ifndef F2OBO_FUZZ_STEP_HARNESS_H_
#define F2OBO_FUZZ_STEP_HARNESS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "f2obo/v1/f2obo.pb.h"
#include "server/session_manager.h"

namespace f2obo::fuzz {

enum Mode : uint8_t {
  kRoundsMask = 0x03,    // runs 1 + (mode & 3) rounds on the same batches
  kRawDecode = 0x04,     // also ToBatch() both batches before the limit checks
  kExactMetrics = 0x08,  // after each applied round, the metrics worker's
                         // ComputeExactMetrics on that round's input
  kTwoPhase = 0x10,      // the core twin runs the durable path: Prepare,
                         // Abort, Prepare again (must be identical), Commit
  kImport = 0x20,        // first message is a SessionExport: Import it
  kFixChecksum = 0x40,   // import: recompute the state's checksum first
                         // (it is not a MAC; a hostile client can do this)
};

// The server's limits (server/session_manager.h), scaled down so that one
// input costs milliseconds.  Everything else is the server's code.
server::Limits FuzzLimits();

enum class Outcome {
  kMalformed,      // framing or protobuf parse failed
  kConfigRefused,  // the manager refused the spec / export
  kStepRefused,    // the session exists, every round was refused
  kApplied,        // at least one round was applied
};

struct Result {
  Outcome outcome = Outcome::kMalformed;
  int rounds_applied = 0;
  int rounds_refused = 0;
  std::string first_error;  // the first refusal's message, if any
};

// Builds an input in the framing above.  `first` is a SessionSpec, or a
// SessionExport when `mode` has kImport.
std::string EncodeInput(uint8_t mode, const google::protobuf::MessageLite& first,
                        const v1::StepRequest& step);

// Runs one input.  Aborts (a crash to libFuzzer) with a message on stderr
// when an invariant fails:
//  * a spec / export the manager accepts converts and opens in the core too,
//    and the manager's exported state equals the core twin's, bit for bit,
//    after creation and after every round;
//  * the manager and the core twin agree on whether a round is refused; a
//    refused round changes nothing (exported state bytes identical);
//  * an applied round advances t by exactly one, its reply carries the
//    twin's x bit for bit, every number stays finite and x inside X;
//  * a retry of the applied index is answered `replayed` with the same x
//    and changes nothing; an index ahead is FAILED_PRECONDITION;
//  * Prepare is deterministic (two Prepares from one state agree bit for
//    bit) and Commit after Abort is a no-op;
//  * the state survives its checkpoint encoding bit-exactly and
//    Session::Restore accepts it;
//  * exact metrics, when they succeed, are finite.
Result RunInput(const uint8_t* data, size_t size);

// The state encoding's checksum (core/state.cc), recomputed in place over
// bytes [0, size - 8) into the last 8 bytes; a no-op below the minimum size.
void FixStateChecksum(std::string* state);

}  // namespace f2obo::fuzz

#endif  // F2OBO_FUZZ_STEP_HARNESS_H_
