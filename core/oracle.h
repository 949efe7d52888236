// The answerer of an oracle family (core/bilevel/families/oracle_family.h): a
// family whose values and derivatives are computed by the client, whose
// step data never leaves it.  The server implements Oracle over the
// OracleSteps stream (server/oracle_stream.h); tests may implement it in
// process.
//
// Contract: Evaluate answers every query of the call or fails as a whole.
// On success each query's requested outputs are written (value, grad_x of
// x_dim entries, grad_y of y_dim entries), all finite.  On failure the
// status says why (the client sent sizes that do not fit, a non-finite
// number, answered another question, went silent or away) and the outputs
// are unspecified; the round that asked must be discarded.  Not
// thread-safe: one round asks at a time.
#ifndef F2OBO_CORE_ORACLE_H_
#define F2OBO_CORE_ORACLE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/batch.h"
#include "core/types.h"

namespace f2obo {

// One question: f on the upper batch or g on the inner batch, at (x, y),
// averaged over `rows` (all rows of the batch, or the listed ones: SF2OBO's
// mini-batches, drawn by the server's RNG).
struct OracleQuery {
  enum class Function { kF, kG };
  Function function = Function::kF;
  absl::Span<const double> x;  // x_dim entries; valid during Evaluate
  absl::Span<const double> y;  // y_dim entries
  RowSet rows;                 // idx == nullptr: every row
  // Outputs (caller-owned, sized); null: not asked.
  double* value = nullptr;
  Vector* grad_x = nullptr;
  Vector* grad_y = nullptr;
};

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Answers `queries` together (one round trip for a remote client).
  virtual absl::Status Evaluate(absl::Span<OracleQuery> queries) = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_ORACLE_H_
