// What a session will cost, estimated from its configuration alone before
// anything is allocated, so that a session too large for the machine or
// the store is refused at once with RESOURCE_EXHAUSTED naming the limit,
// not after minutes of allocation and a failed write (a ridge_hpo
// session of 49,999,999 features failed after 37 s with a 3.5 GB peak).
//
// Upper estimates: the dimensions are bounded over every family (a field
// the family ignores still counts, so that no field can hide another, as
// in CheckedConfig's max_y_dim guard, install_checks.h).  Memory an algorithm keeps beyond
// x, y and z (windows of hypergradients, iterate buffers, explicit
// matrices) is not counted: only the algorithm's registry entry knows it,
// and that arrives with the problem-class restructuring.
#ifndef F2OBO_SERVER_SESSION_FOOTPRINT_H_
#define F2OBO_SERVER_SESSION_FOOTPRINT_H_

#include <cstdint>

#include "core/family_config.h"

namespace f2obo::server {

struct SessionFootprint {
  int64_t x = 0;  // entries of x, at most
  int64_t y = 0;  // entries of y (and of z), at most
  // Bytes of the state's record in the store: x, y and z as doubles.
  int64_t record_bytes = 0;
  // Resident bytes while the session lives and steps: the state and the
  // round's scratch copy (core Session), the serialized record of a commit
  // and the copy of x and y a metrics job holds; for an oracle session its
  // state and a step's peak (kOracleStepYCopies).
  int64_t memory_bytes = 0;
};

SessionFootprint EstimateFootprint(const FamilyConfig& family);

// memory_bytes per entry of y for a session whose x is small: what a
// memory budget divided by this says about the largest y it holds.
inline constexpr int64_t kMemoryBytesPerYEntry = 8 * (3 * 2 + 1);
// An oracle session (docs/oracle-protocol.md, "Memory", the table this
// mirrors): between steps it holds y and z and no other vector of y's
// size; while a step runs, kOracleStepYCopies more at its peak (the
// round's copy of y and z, the algorithm's three gradients, the client's
// z_k and y_k the recipes build on, an answer of three gradients in flight,
// as gRPC's slices and decoded, and the automatic inner steps' two previous
// directions).  The defaults need them all: the penalty schedule that
// follows the inner loops reads grad_y f and grad_y g apart (three
// gradients, not two), and automatic steps keep two secant vectors.
// Admission counts both: any session may step at any time, and nothing
// bounds how many at once.
inline constexpr int64_t kOracleIdleYCopies = 2;
inline constexpr int64_t kOracleStepYCopies = 15;

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_SESSION_FOOTPRINT_H_
