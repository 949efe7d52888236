#include "core/batch.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace f2obo {

std::string InputNumberProblem(double v) {
  if (!std::isfinite(v)) return "not finite";
  return absl::StrCat(v, " is beyond the input bound |v| <= ", kMaxInputMagnitude);
}

namespace {

// Whether every v[i] is an input number (InputNumberOk), in one pass the
// compiler vectorizes: for IEEE doubles, |v| <= bound (bound finite and
// >= 0) exactly when the bits of v without the sign, read as an unsigned
// integer, are at most those of the bound (non-negative doubles order as
// their bit patterns, and infinities and NaNs lie above every finite
// one), so the test is an integer maximum.  Eigen's
// `(abs() <= bound).all()` stops at the first failure and is not
// vectorized: 3-4x slower, ~15% of an IR-FSCG step at d = 1,000 (issue
// 23; perf).
bool AllInputNumbers(const double* v, int64_t n) {
  uint64_t bound;
  std::memcpy(&bound, &kMaxInputMagnitude, sizeof(bound));
  uint64_t top = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits;
    std::memcpy(&bits, v + i, sizeof(bits));
    bits &= ~(uint64_t{1} << 63);
    top = bits > top ? bits : top;
  }
  return top <= bound;
}

}  // namespace

absl::Status CheckInputNumbers(const double* v, int64_t n, absl::string_view field, int64_t cols) {
  // The common case (every number fine) is one vectorized pass; the scalar
  // search for the offender runs only on the way to an error.
  if (n <= 0 || AllInputNumbers(v, n)) return absl::OkStatus();
  int64_t i = 0;
  while (InputNumberOk(v[i])) ++i;
  return absl::InvalidArgumentError(
      absl::StrCat(field, "[", i, "]: ", InputNumberProblem(v[i]),
                   cols > 0 ? absl::StrCat(" (row ", i / cols, ", column ", i % cols, ")") : ""));
}

int64_t Batch::FeatureBytes() const {
  if (sparse_features) {
    return static_cast<int64_t>(csr.nonZeros()) *
               static_cast<int64_t>(sizeof(double) + sizeof(int)) +
           static_cast<int64_t>(csr.rows() + 1) * static_cast<int64_t>(sizeof(int));
  }
  return static_cast<int64_t>(dense.size()) * static_cast<int64_t>(sizeof(double));
}

namespace {

// The structural checks shared by MakeCsr (raw arrays from the wire) and
// ValidateFeatures (a CsrMatrix built in-process): the row kernels in
// core/features.h index w[col[k]] and valuePtr()[k] with no bounds checks, so
// one bad offset or column is an out-of-bounds read, not a wrong number.
// `outer` has rows + 1 entries; entries [outer[0], outer[rows]) of `inner`
// and `val` are read, and `stored` is how many the arrays hold.  Checks run
// in an order that never reads past what an earlier check has bounded: the
// offsets first (all of them, before any column), then each row's entries.
// Duplicate columns within a row are refused (strictly increasing), not
// summed: Eigen's sparse kernels and coeff() assume no duplicates, and a
// client that sends them almost certainly has a bug in its encoder.
template <typename OuterT, typename InnerT>
absl::Status CheckCsrStructure(int64_t rows, int64_t cols, const OuterT* outer, const InnerT* inner,
                               const double* val, int64_t stored, const std::string& prefix) {
  if (outer[0] < 0 || static_cast<int64_t>(outer[0]) > stored) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "indptr[0] = ", outer[0], " outside [0, ", stored, "]"));
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t begin = outer[r], end = outer[r + 1];
    if (end < begin) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "indptr: decreases at row ", r,
                                                     " (indptr[", r, "] = ", begin, ", indptr[",
                                                     r + 1, "] = ", end, ")"));
    }
    if (end > stored) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "indptr[", r + 1, "] = ", end,
                                                     " exceeds nnz = ", stored, " (row ", r, ")"));
    }
  }
  // The common case (a well-formed matrix) in branch-free passes the
  // compiler vectorizes: each row's columns strictly increasing (so its
  // first and last bound them all) and every value an input number.  Only
  // on the way to an error does the entry-by-entry search below run, for
  // the precise message (it checked each entry with three branches, ~6% of
  // an IR-SCG step on CSR rows).
  bool well_formed = AllInputNumbers(val + outer[0], static_cast<int64_t>(outer[rows]) - outer[0]);
  for (int64_t r = 0; r < rows && well_formed; ++r) {
    const int64_t begin = outer[r], end = outer[r + 1];
    if (begin == end) continue;
    unsigned bad = 0;
    for (int64_t k = begin + 1; k < end; ++k) {
      bad |= static_cast<unsigned>(inner[k] <= inner[k - 1]);
    }
    well_formed = bad == 0 && static_cast<int64_t>(inner[begin]) >= 0 &&
                  static_cast<int64_t>(inner[end - 1]) < cols;
  }
  if (well_formed) return absl::OkStatus();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t begin = outer[r], end = outer[r + 1];
    for (int64_t k = begin; k < end; ++k) {
      const int64_t col = inner[k];
      if (col < 0 || col >= cols) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, "indices[", k, "]: column ", col,
                                                       " outside [0, ", cols, ") (row ", r, ")"));
      }
      if (k > begin && col <= static_cast<int64_t>(inner[k - 1])) {
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, "indices: row ", r, " columns not strictly increasing at ", k,
                         " (column ", col, " after ", inner[k - 1],
                         col == static_cast<int64_t>(inner[k - 1]) ? ", a duplicate" : "", ")"));
      }
      if (!InputNumberOk(val[k])) {
        return absl::InvalidArgumentError(absl::StrCat(prefix, "values[", k,
                                                       "]: ", InputNumberProblem(val[k]), " (row ",
                                                       r, ", column ", col, ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CsrMatrix> MakeCsr(int rows, int cols, const std::vector<int64_t>& indptr,
                                  const std::vector<int32_t>& indices,
                                  const std::vector<double>& values) {
  if (rows < 0 || cols < 0) {
    return absl::InvalidArgumentError(absl::StrCat("csr: negative shape ", rows, " x ", cols));
  }
  // int64 so that rows = INT_MAX does not overflow in the message.
  const int64_t expected_indptr = static_cast<int64_t>(rows) + 1;
  if (indptr.size() != static_cast<size_t>(expected_indptr)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csr.indptr: has ", indptr.size(), " entries, expected rows + 1 = ", expected_indptr));
  }
  if (indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: ", indices.size(), " indices but ", values.size(), " values"));
  }
  // CsrMatrix stores offsets as int.
  if (indices.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: nnz = ", indices.size(), " exceeds ", std::numeric_limits<int>::max()));
  }
  const int64_t nnz = static_cast<int64_t>(indices.size());
  if (indptr.front() != 0 || indptr.back() != nnz) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr.indptr: must start at 0 and end at nnz = ", nnz, ", got ", indptr.front(),
                     " .. ", indptr.back()));
  }
  absl::Status st =
      CheckCsrStructure(rows, cols, indptr.data(), indices.data(), values.data(), nnz, "csr.");
  if (!st.ok()) return st;
  CsrMatrix m(rows, cols);
  m.resizeNonZeros(static_cast<Eigen::Index>(values.size()));
  for (int r = 0; r <= rows; ++r) {
    m.outerIndexPtr()[r] = static_cast<int>(indptr[r]);
  }
  for (size_t k = 0; k < values.size(); ++k) {
    m.innerIndexPtr()[k] = indices[k];
    m.valuePtr()[k] = values[k];
  }
  return m;
}

absl::Status ValidateFeatures(const Batch& b, int expected_cols, const char* what) {
  if (b.rows() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty batch"));
  }
  if (b.cols() != expected_cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": rows have ", b.cols(), " features, the session expects ", expected_cols));
  }
  if (b.sparse_features) {
    if (!b.csr.isCompressed()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": csr features must be compressed"));
    }
    // A CsrMatrix assembled in-process (not through MakeCsr) may have been
    // filled through its raw arrays, so the structure is checked again here
    // before the unchecked row kernels read it.
    absl::Status st = CheckCsrStructure(
        b.csr.rows(), b.csr.cols(), b.csr.outerIndexPtr(), b.csr.innerIndexPtr(), b.csr.valuePtr(),
        static_cast<int64_t>(b.csr.data().size()), absl::StrCat(what, ": csr."));
    if (!st.ok()) return st;
  } else if (!b.row_ptrs.empty() || !AllInputNumbers(b.dense.data(), b.dense.size())) {
    // The offender's row and column; rows held by address (a row window's
    // view, where `dense` is empty) are checked here row by row.
    for (int r = 0; r < b.rows(); ++r) {
      const double* row = b.DenseRow(r);
      if (AllInputNumbers(row, b.cols())) continue;
      int j = 0;
      while (InputNumberOk(row[j])) ++j;
      return absl::InvalidArgumentError(absl::StrCat(what, ": feature (row ", r, ", column ", j,
                                                     ") ", std::isfinite(row[j]) ? "" : "is ",
                                                     InputNumberProblem(row[j])));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateLabels(const Batch& b, int classes, const char* what) {
  if (b.labels.size() != static_cast<size_t>(b.rows())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", b.labels.size(), " labels for ", b.rows(), " rows"));
  }
  for (size_t i = 0; i < b.labels.size(); ++i) {
    if (b.labels[i] < 0 || b.labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": label[", i, "] = ", b.labels[i], " outside [0, ", classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTargets(const Batch& b, const char* what) {
  if (b.targets.size() != b.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", b.targets.size(), " targets for ", b.rows(), " rows"));
  }
  if (AllInputNumbers(b.targets.data(), b.targets.size())) return absl::OkStatus();
  for (Eigen::Index i = 0; i < b.targets.size(); ++i) {
    if (!InputNumberOk(b.targets[i])) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": target[", i, "] ",
                                                     std::isfinite(b.targets[i]) ? "" : "is ",
                                                     InputNumberProblem(b.targets[i])));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo
