// RowWindow (core/simple/row_window.h).
//
// Choices:
//  * Kind: the first non-empty batch fixes dense or CSR, and which of labels
//    and targets the window keeps; later batches of the other storage are
//    converted (dense -> CSR keeps the non-zero entries, CSR -> dense
//    scatters), and a kept field a later batch lacks is filled with 0 (the
//    family's ValidateBatch makes that impossible on a session's path).
//    An empty window has no kind: size() == 0 means "not fixed yet" (with
//    capacity > 0 a window never empties once filled).
//  * Dense rows stay contiguous, oldest first, so rows() is an ordinary
//    Batch: appending k rows to a full window moves the kept rows up by k
//    (one memmove of the window, O(window cols) bytes) and writes the k new
//    rows; targets and labels likewise.  CSR windows are rebuilt, O(window
//    nnz).  A batch of more than `capacity` rows keeps its last ones.
//  * Rows of another width than `cols` are ignored (callers append
//    validated batches; this only keeps a bad call from writing out of
//    bounds).
//
// Encoding (kEncodedVectors aux vectors, from `first`):
//   [0] header (6): kind (0 empty, 1 dense, 2 CSR), has_labels, has_targets,
//       rows, cols, nnz (0 for dense)
//   [1] values: dense row-major (rows cols) or CSR values (nnz)
//   [2] CSR row offsets (rows + 1; empty for dense)
//   [3] CSR column indices (nnz; empty for dense)
//   [4] labels (rows, if kept) then targets (rows, if kept)
// Integers are stored as doubles (exact below 2^53) and checked to be
// integers in range on Decode before any cast.
#include "core/simple/row_window.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

enum WindowKind { kEmpty = 0, kDense = 1, kCsr = 2 };
constexpr int kHeaderSize = 6;

// Row i of b as (column, value) pairs, visited in column order; dense rows
// give their non-zero entries when `nonzero_only`.
template <typename Fn>
void ForEachEntry(const Batch& b, int i, bool nonzero_only, Fn fn) {
  if (b.sparse_features) {
    for (int p = b.csr.outerIndexPtr()[i]; p < b.csr.outerIndexPtr()[i + 1]; ++p) {
      fn(b.csr.innerIndexPtr()[p], b.csr.valuePtr()[p]);
    }
    return;
  }
  for (Eigen::Index j = 0; j < b.dense.cols(); ++j) {
    const double v = b.dense(i, j);
    if (!nonzero_only || v != 0.0) fn(static_cast<int>(j), v);
  }
}

// Whether v is an integer in [lo, hi] (so that casting it is defined).
bool IntegerIn(double v, double lo, double hi) { return v >= lo && v <= hi && std::floor(v) == v; }

absl::Status Bad(int index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("aux[", index, "]: row window ", what));
}

}  // namespace

void RowWindow::Append(const Batch& b) {
  const int k = b.rows();
  if (k == 0 || capacity_ <= 0 || b.cols() != cols_) return;
  // The first rows fix the window's storage and fields; afterwards they are
  // read off the window itself (it never empties again).
  const bool fresh = size() == 0;
  const bool keep_labels = fresh ? !b.labels.empty() : !rows_.labels.empty();
  const bool keep_targets = fresh ? b.targets.size() > 0 : rows_.targets.size() > 0;
  if (fresh) {
    rows_ = Batch();
    rows_.sparse_features = b.sparse_features;
    if (b.sparse_features) {
      rows_.csr = CsrMatrix(0, cols_);
      rows_.csr.makeCompressed();
    } else {
      rows_.dense = RowMatrix(0, cols_);
    }
  }
  const int take = std::min(k, capacity_);  // the batch's last `take` rows
  const int first_new = k - take;
  const int old = size();
  const int keep = std::min(old, capacity_ - take);  // the newest `keep` old rows
  const int drop = old - keep;
  const int total = keep + take;

  if (!rows_.sparse_features) {
    RowMatrix& m = rows_.dense;
    if (drop > 0 && keep > 0) {
      std::memmove(m.data(), m.data() + static_cast<size_t>(drop) * cols_,
                   sizeof(double) * static_cast<size_t>(keep) * cols_);
    }
    m.conservativeResize(total, cols_);
    for (int r = 0; r < take; ++r) {
      const int i = first_new + r;
      if (b.sparse_features) {
        m.row(keep + r).setZero();
        ForEachEntry(b, i, false, [&](int j, double v) { m(keep + r, j) = v; });
      } else {
        m.row(keep + r) = b.dense.row(i);
      }
    }
  } else {
    const CsrMatrix& src = rows_.csr;
    const int* op = src.outerIndexPtr();
    int64_t nnz = op[old] - op[drop];
    for (int r = 0; r < take; ++r) {
      ForEachEntry(b, first_new + r, true, [&](int, double) { ++nnz; });
    }
    CsrMatrix next(total, cols_);
    next.resizeNonZeros(static_cast<Eigen::Index>(nnz));
    int* outer = next.outerIndexPtr();
    int* inner = next.innerIndexPtr();
    double* val = next.valuePtr();
    int pos = 0;
    outer[0] = 0;
    for (int r = 0; r < keep; ++r) {
      for (int p = op[drop + r]; p < op[drop + r + 1]; ++p) {
        inner[pos] = src.innerIndexPtr()[p];
        val[pos++] = src.valuePtr()[p];
      }
      outer[r + 1] = pos;
    }
    for (int r = 0; r < take; ++r) {
      ForEachEntry(b, first_new + r, true, [&](int j, double v) {
        inner[pos] = j;
        val[pos++] = v;
      });
      outer[keep + r + 1] = pos;
    }
    rows_.csr = std::move(next);
  }

  if (keep_labels) {
    std::vector<int32_t>& l = rows_.labels;
    l.erase(l.begin(), l.begin() + drop);
    for (int r = 0; r < take; ++r) {
      l.push_back(b.labels.empty() ? 0 : b.labels[static_cast<size_t>(first_new + r)]);
    }
  }
  if (keep_targets) {
    Vector& t = rows_.targets;
    if (drop > 0 && keep > 0) {
      std::memmove(t.data(), t.data() + drop, sizeof(double) * static_cast<size_t>(keep));
    }
    t.conservativeResize(total);
    for (int r = 0; r < take; ++r) {
      t[keep + r] = b.targets.size() > 0 ? b.targets[first_new + r] : 0.0;
    }
  }
}

void RowWindow::Encode(std::vector<Vector>* out) const {
  const int n = size();
  const bool csr = n > 0 && rows_.sparse_features;
  const bool labels = n > 0 && !rows_.labels.empty();
  const bool targets = n > 0 && rows_.targets.size() > 0;
  const int64_t nnz = csr ? rows_.csr.outerIndexPtr()[n] : 0;
  Vector header(kHeaderSize);
  header << (n == 0 ? kEmpty : (csr ? kCsr : kDense)), labels ? 1.0 : 0.0, targets ? 1.0 : 0.0, n,
      cols_, static_cast<double>(nnz);
  out->push_back(std::move(header));
  if (n == 0) {
    for (int k = 1; k < kEncodedVectors; ++k) out->emplace_back(0);
    return;
  }
  if (csr) {
    const CsrMatrix& m = rows_.csr;
    out->push_back(Eigen::Map<const Vector>(m.valuePtr(), nnz));
    Vector outer(n + 1), inner(nnz);
    for (int r = 0; r <= n; ++r) outer[r] = m.outerIndexPtr()[r];
    for (int64_t p = 0; p < nnz; ++p) inner[p] = m.innerIndexPtr()[p];
    out->push_back(std::move(outer));
    out->push_back(std::move(inner));
  } else {
    out->push_back(Eigen::Map<const Vector>(rows_.dense.data(), rows_.dense.size()));
    out->emplace_back(0);
    out->emplace_back(0);
  }
  Vector fields((labels ? n : 0) + (targets ? n : 0));
  int pos = 0;
  if (labels) {
    for (int r = 0; r < n; ++r) fields[pos++] = rows_.labels[static_cast<size_t>(r)];
  }
  if (targets) fields.segment(pos, n) = rows_.targets;
  out->push_back(std::move(fields));
}

absl::StatusOr<RowWindow> RowWindow::Decode(const StateParts& aux, int first, int capacity,
                                            int cols, bool trusted) {
  if (first < 0 || aux.size() < static_cast<size_t>(first) + kEncodedVectors) {
    return absl::InvalidArgumentError(absl::StrCat("aux: a row window needs ", kEncodedVectors,
                                                   " vectors from aux[", first, "], there are ",
                                                   aux.size()));
  }
  const Vector& header = aux[static_cast<size_t>(first)];
  const Vector& values = aux[static_cast<size_t>(first) + 1];
  const Vector& outer = aux[static_cast<size_t>(first) + 2];
  const Vector& inner = aux[static_cast<size_t>(first) + 3];
  const Vector& fields = aux[static_cast<size_t>(first) + 4];
  if (header.size() != kHeaderSize) {
    return Bad(first,
               absl::StrCat("header has ", header.size(), " entries, expected ", kHeaderSize));
  }
  if (!IntegerIn(header[0], kEmpty, kCsr) || !IntegerIn(header[1], 0, 1) ||
      !IntegerIn(header[2], 0, 1)) {
    return Bad(first, "header: kind must be 0, 1 or 2 and the field flags 0 or 1");
  }
  if (!IntegerIn(header[3], 0, std::max(capacity, 0))) {
    return Bad(first, absl::StrCat("header: ", header[3], " rows, expected a count in [0, ",
                                   std::max(capacity, 0), "]"));
  }
  if (header[4] != cols) {
    return Bad(first, absl::StrCat("header: ", header[4], " columns, expected ", cols));
  }
  const int kind = static_cast<int>(header[0]);
  const bool labels = header[1] == 1.0, targets = header[2] == 1.0;
  const int n = static_cast<int>(header[3]);
  RowWindow w(capacity, cols);
  if (n == 0 || kind == kEmpty) {
    if (n != 0 || kind != kEmpty || labels || targets || header[5] != 0.0) {
      return Bad(first, "header: an empty window has kind 0, no fields and no entries");
    }
    for (int k = 1; k < kEncodedVectors; ++k) {
      if (aux[static_cast<size_t>(first + k)].size() != 0) {
        return Bad(first + k, "must be empty for an empty window");
      }
    }
    return w;
  }
  Batch& b = w.rows_;
  b.sparse_features = kind == kCsr;
  if (kind == kDense) {
    if (header[5] != 0.0) return Bad(first, "header: a dense window has nnz 0");
    if (values.size() != static_cast<int64_t>(n) * cols) {
      return Bad(first + 1, absl::StrCat("has ", values.size(), " values, expected rows * cols = ",
                                         static_cast<int64_t>(n) * cols));
    }
    if (outer.size() != 0 || inner.size() != 0) {
      return Bad(outer.size() != 0 ? first + 2 : first + 3, "must be empty for a dense window");
    }
    if (absl::Status s = trusted ? absl::OkStatus()
                                 : CheckInputNumbers(values.data(), values.size(),
                                                     absl::StrCat("aux[", first + 1, "]"), cols);
        !s.ok()) {
      return s;
    }
    b.dense = Eigen::Map<const RowMatrix>(values.data(), n, cols);
  } else {
    const double max_nnz = static_cast<double>(n) * cols;
    if (!IntegerIn(header[5], 0, std::min(max_nnz, 2147483647.0))) {
      return Bad(first, absl::StrCat("header: nnz ", header[5], " outside [0, rows * cols]"));
    }
    const int64_t nnz = static_cast<int64_t>(header[5]);
    if (values.size() != nnz || inner.size() != nnz) {
      return Bad(values.size() != nnz ? first + 1 : first + 3,
                 absl::StrCat("has ", values.size() != nnz ? values.size() : inner.size(),
                              " entries, expected nnz = ", nnz));
    }
    if (outer.size() != n + 1) {
      return Bad(first + 2,
                 absl::StrCat("has ", outer.size(), " row offsets, expected rows + 1 = ", n + 1));
    }
    std::vector<int64_t> indptr(static_cast<size_t>(n) + 1);
    for (int r = 0; r <= n; ++r) {
      if (!IntegerIn(outer[r], 0, static_cast<double>(nnz))) {
        return Bad(first + 2, absl::StrCat("row offset ", r, " = ", outer[r],
                                           " is not an integer in [0, nnz]"));
      }
      indptr[static_cast<size_t>(r)] = static_cast<int64_t>(outer[r]);
    }
    std::vector<int32_t> indices(static_cast<size_t>(nnz));
    for (int64_t p = 0; p < nnz; ++p) {
      if (!IntegerIn(inner[p], 0, cols - 1)) {
        return Bad(first + 3, absl::StrCat("column index ", p, " = ", inner[p],
                                           " is not an integer in [0, cols)"));
      }
      indices[static_cast<size_t>(p)] = static_cast<int32_t>(inner[p]);
    }
    // MakeCsr checks the rest: offsets monotone from 0 to nnz, columns
    // strictly increasing within a row, values input numbers.
    absl::StatusOr<CsrMatrix> m =
        MakeCsr(n, cols, indptr, indices, std::vector<double>(values.data(), values.data() + nnz));
    if (!m.ok()) {
      // Name the vector the problem is in.
      const absl::string_view msg = m.status().message();
      const int at = absl::StartsWith(msg, "csr.indptr")    ? first + 2
                     : absl::StartsWith(msg, "csr.indices") ? first + 3
                                                            : first + 1;
      return Bad(at, msg);
    }
    b.csr = *std::move(m);
  }
  if (fields.size() != (labels ? n : 0) + (targets ? n : 0)) {
    return Bad(first + 4, absl::StrCat("has ", fields.size(), " entries, expected ",
                                       (labels ? n : 0) + (targets ? n : 0),
                                       " (labels and targets of the kept rows)"));
  }
  int pos = 0;
  if (labels) {
    for (int r = 0; r < n; ++r, ++pos) {
      if (!IntegerIn(fields[pos], 0, 2147483647.0)) {
        return Bad(first + 4,
                   absl::StrCat("label ", r, " = ", fields[pos], " is not a non-negative integer"));
      }
      b.labels.push_back(static_cast<int32_t>(fields[pos]));
    }
  }
  if (targets) {
    if (absl::Status s = trusted ? absl::OkStatus()
                                 : CheckInputNumbers(fields.data() + pos, n,
                                                     absl::StrCat("aux[", first + 4, "] targets"));
        !s.ok()) {
      return s;
    }
    b.targets = fields.segment(pos, n);
  }
  return w;
}

}  // namespace f2obo
