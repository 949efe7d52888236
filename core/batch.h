// A step's data: the upper batch (defines f_t) and the inner batch (g_t).
//
// One struct serves every family; each family documents which fields it
// reads and validates them (its ValidateBatch).  Sample-based families
// read `dense` or `csr` features plus `labels` or `targets`; the quadratic
// family reads `M`, `c` (inner) and `d` (upper).
#ifndef F2OBO_CORE_BATCH_H_
#define F2OBO_CORE_BATCH_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/types.h"

namespace f2obo {

// The magnitude bound on every number a client sends (every batch field,
// read by the family or not, and the session's initial point): finite with
// |v| <= kMaxInputMagnitude.  Chosen so that a product of two inputs stays
// <= 1e300 and a sum of up to 1e8 such products (a dot product over a
// batch row, a squared norm) stays below DBL_MAX ~ 1.8e308; a family that
// forms products of three or more inputs bounds those itself (see
// QuadraticFamily::ValidateBatch).  What the state grows into over many
// rounds is bounded by the round's own magnitude check, not here.
// Documented in the proto's conventions and the README.
inline constexpr double kMaxInputMagnitude = 1e150;

// Whether `v` may be an input number (false for NaN and +-inf).
inline bool InputNumberOk(double v) { return std::abs(v) <= kMaxInputMagnitude; }
// Why `v` may not be: "not finite" or "<v> is beyond the input bound ...".
std::string InputNumberProblem(double v);
// INVALID_ARGUMENT "<field>[i]: <problem>" for the first v[i] that is not an
// input number; with `cols` > 0 the values are a row-major matrix of that
// width and the message adds " (row r, column j)".
absl::Status CheckInputNumbers(const double* v, int64_t n, absl::string_view field,
                               int64_t cols = 0);

class Oracle;  // core/oracle.h

struct Batch {
  // Features: `dense` unless `sparse_features`, then `csr`.
  bool sparse_features = false;
  RowMatrix dense;
  CsrMatrix csr;
  // Dense rows held elsewhere, by address: when non-empty, dense row i is
  // the `row_cols` values at row_ptrs[i] (DenseRow) and `dense` is empty.
  // Only a dense row window builds such a batch (core/simple/row_window.h:
  // its rows stay in the state parts they were written to), and only code
  // that reads rows through DenseRow reads it (the row kernels of
  // core/features.h, the simple families); the addresses are valid while
  // their owner keeps them.
  std::vector<const double*> row_ptrs;
  int row_cols = 0;
  std::vector<int32_t> labels;  // class indices in [0, C)
  Vector targets;               // regression targets
  Vector class_weights;         // optional per-class weights (loss_tuning)
  // Quadratic family: g uses M (d2 x d1) and c (d2); f uses d (d2).
  Matrix M;
  Vector c;
  Vector d;
  // Oracle families (core/bilevel/families/oracle_family.h): the rows stay with
  // the client, which answers for them through `oracle`; the server knows
  // only how many there are.  Null for every other family.
  std::shared_ptr<Oracle> oracle;
  int oracle_rows = 0;
  // Multi-task oracle sessions: the task whose batch this is (queries on
  // it name the task); -1 otherwise.
  int oracle_task = -1;

  // Number of samples (0 for families without samples, e.g. quadratic).
  int rows() const {
    if (oracle != nullptr) return oracle_rows;
    if (!row_ptrs.empty()) return static_cast<int>(row_ptrs.size());
    return static_cast<int>(sparse_features ? csr.rows() : dense.rows());
  }
  int cols() const {
    if (!row_ptrs.empty()) return row_cols;
    return static_cast<int>(sparse_features ? csr.cols() : dense.cols());
  }
  // Dense row i's cols() values, wherever they are stored.
  const double* DenseRow(int i) const {
    return row_ptrs.empty() ? dense.data() + static_cast<int64_t>(i) * dense.cols()
                            : row_ptrs[static_cast<size_t>(i)];
  }
  // Bytes of sample data a full pass reads (for throughput figures).
  int64_t FeatureBytes() const;
};

struct TaskData;

// Which of a step's two batches a family is asked about (f_t's or g_t's).
enum class BatchRole { kUpper, kInner };

// One step's data.  Single-task classes (bilevel, simple bilevel) read
// `upper` and `inner` and refuse a non-empty `tasks` (Session::Prepare);
// multi-task sessions (core/multitask/) read only `tasks` and refuse
// non-empty top-level batches.
struct StepData {
  Batch upper;
  Batch inner;
  // Multi-task steps: one entry per task the step carries, each with its
  // own batches (a task's `data.tasks` is empty).
  std::vector<TaskData> tasks = {};
};

// One task's part of a multi-task step.  Its batches are a StepData so that
// every oracle taking a step's data (a family's Prepare, the exact metrics,
// the samplers) serves a task unchanged.
struct TaskData {
  int task = 0;   // in [0, m)
  StepData data;  // upper (f_i) and inner (g_i) batches; data.tasks empty
  // The probability with which the client sampled this task for this step
  // (RSVRB's p_i, Alg. 2 line 3); 0: uniform sampling of the step's k tasks
  // among the m, p_i = k / m.
  double probability = 0.0;
};

// A subset of a batch's rows: all of them (idx == nullptr) or the listed
// indices (SF2OBO mini-batches).  Does not own `idx`.
struct RowSet {
  const int* idx = nullptr;
  int n = 0;
  int row(int k) const { return idx != nullptr ? idx[k] : k; }
  static RowSet All(const Batch& b) { return RowSet{nullptr, b.rows()}; }
};

// The rows of one batch a family evaluates on.
struct BatchView {
  const Batch* batch = nullptr;
  RowSet rows;
  static BatchView All(const Batch& b) { return BatchView{&b, RowSet::All(b)}; }
};

// Builds a CSR matrix from raw arrays, validating everything first:
// indptr has rows+1 non-decreasing entries from 0 to nnz, column indices are
// in [0, cols) and strictly increasing within a row, values are input
// numbers (finite, |v| <= kMaxInputMagnitude).
absl::StatusOr<CsrMatrix> MakeCsr(int rows, int cols, const std::vector<int64_t>& indptr,
                                  const std::vector<int32_t>& indices,
                                  const std::vector<double>& values);

// Shared checks for sample-based batches; `what` prefixes error messages
// (e.g. "upper batch").  Every number they read must be an input number.
absl::Status ValidateFeatures(const Batch& b, int expected_cols, const char* what);
absl::Status ValidateLabels(const Batch& b, int classes, const char* what);
absl::Status ValidateTargets(const Batch& b, const char* what);

}  // namespace f2obo

#endif  // F2OBO_CORE_BATCH_H_
