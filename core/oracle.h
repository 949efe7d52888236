// The answerer of the oracle families (core/bilevel/families/oracle_family.h,
// the multi-task "multitask_oracle" of core/multitask/multitask_family.cc,
// core/simple/families/oracle.cc): families whose values and derivatives
// are computed by the client, whose step data never leaves it.  The server
// implements Oracle over the OracleSteps stream (server/oracle_stream.h);
// tests may implement it in process.
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

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/algorithm_info.h"
#include "core/batch.h"
#include "core/options.h"
#include "core/types.h"

namespace f2obo {

// One question: f on the upper batch or g on the inner batch, at (x, y),
// averaged over `rows` (all rows of the batch, or the listed ones: SF2OBO's
// mini-batches, drawn by the server's RNG).
struct OracleQuery {
  enum class Function { kF, kG };
  Function function = Function::kF;
  absl::Span<const double> x;  // x_dim entries; valid during Evaluate
  // y_dim entries; empty for the simple bilevel class, whose f and g are
  // functions of x alone.
  absl::Span<const double> y;
  RowSet rows;  // idx == nullptr: every row
  // Multi-task sessions: the task i whose f_i or g_i (the rows index that
  // task's batches); -1 in the other classes.
  int task = -1;
  // Outputs (caller-owned, sized); null: not asked.
  double* value = nullptr;
  Vector* grad_x = nullptr;
  Vector* grad_y = nullptr;
  // fused (function kF only): grad_y receives grad_y f + fuse_g grad_y g at
  // (x, y), f on `rows` of the upper batch and g on `g_rows` of the inner
  // batch: the direction of F2OBO's y-update (paper Algorithm 1, line 6),
  // which reads only that sum, so one vector crosses the wire, not two.
  bool fused = false;
  double fuse_g = 0.0;
  RowSet g_rows;
};

class Oracle {
 public:
  virtual ~Oracle() = default;
  // Answers `queries` together (one round trip for a remote client).
  virtual absl::Status Evaluate(absl::Span<OracleQuery> queries) = 0;
};

// The registry names of the oracle families, one per problem class.
inline constexpr const char* kOracleFamilies[] = {"oracle", "multitask_oracle", "simple_oracle"};
bool IsOracleFamily(std::string_view family);

// What an oracle family keeps of a step's oracle: the oracle itself (held,
// so that a new step's oracle is told apart from the one the step's tasks
// share) and the first failure of the step, after which nothing more is
// asked and every requested output is NaN (the round that asked is
// discarded with that failure: it says why better than the NaN).
class OracleCalls {
 public:
  // The oracle of the batch being evaluated; another oracle than the last
  // one (a new step) clears the failure.
  void Use(const std::shared_ptr<Oracle>& oracle);
  // Asks the oracle unless an earlier question of the step failed; on
  // failure records it and fills every requested output with NaN.
  void Ask(absl::Span<OracleQuery> queries);
  // Records a request the client cannot answer (an HVP, a smoothness
  // estimate: the algorithm should have been refused at create).
  void Unsupported(std::string_view family, std::string_view what);
  const absl::Status& failure() const { return failure_; }

 private:
  std::shared_ptr<Oracle> oracle_;
  absl::Status failure_;
};

// Whether an oracle family can serve algorithm `info` with options `o`:
// its client answers values and first derivatives (no HVPs, so no
// second-order algorithm and no automatic step size, estimated with HVPs)
// and keeps its rows (no algorithm whose state keeps rows of past steps).
// INVALID_ARGUMENT naming what is missing and the algorithms of the class
// (`algorithms`) it serves.
absl::Status CheckOracleServes(std::string_view family, const AlgorithmInfo& info,
                               const AlgorithmOptions& o,
                               const std::vector<const AlgorithmInfo*>& algorithms);

}  // namespace f2obo

#endif  // F2OBO_CORE_ORACLE_H_
