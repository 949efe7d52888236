// RowWindow's durable forms (core/simple/row_window.h): a segment of rows
// (DecodeSegment; written by EncodeNewest and AppendAsSegment in
// row_window.cc) and the legacy single-part layout (Encode, Decode).
//
// Legacy encoding (kEncodedVectors aux vectors, from `first`; states
// written before segments):
//   [0] header (6): kind (0 empty, 1 dense, 2 CSR), has_labels, has_targets,
//       rows, cols, nnz (0 for dense)
//   [1] values: dense row-major (rows cols) or CSR values (nnz)
//   [2] CSR row offsets (rows + 1; empty for dense)
//   [3] CSR column indices (nnz; empty for dense)
//   [4] labels (rows, if kept) then targets (rows, if kept)
// Integers are stored as doubles (exact below 2^53) and checked to be
// integers in range on Decode before any cast.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/simple/row_window.h"

namespace f2obo {
namespace {

enum WindowKind { kEmpty = 0, kDense = 1, kCsr = 2 };
constexpr int kHeaderSize = 6;
constexpr double kMaxInt = 2147483647.0;

// Whether v is an integer in [lo, hi] (so that casting it is defined).
bool IntegerIn(double v, double lo, double hi) { return v >= lo && v <= hi && std::floor(v) == v; }

absl::Status Bad(int index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("aux[", index, "]: row window ", what));
}

absl::Status BadSegment(int index, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("aux[", index, "]: row segment ", what));
}

// CSR from checked offsets, indices and values; the error names the aux
// vector (at + 0 values, + 1 offsets, + 2 indices) the problem is in.
absl::StatusOr<CsrMatrix> CheckedCsr(int rows, int cols, std::vector<int64_t> indptr,
                                     std::vector<int32_t> indices, std::vector<double> values,
                                     int values_at, int offsets_at, int indices_at,
                                     absl::Status (*bad)(int, absl::string_view)) {
  absl::StatusOr<CsrMatrix> m = MakeCsr(rows, cols, indptr, indices, values);
  if (m.ok()) return m;
  const absl::string_view msg = m.status().message();
  const int at = absl::StartsWith(msg, "csr.indptr")    ? offsets_at
                 : absl::StartsWith(msg, "csr.indices") ? indices_at
                                                        : values_at;
  return bad(at, msg);
}

}  // namespace

absl::StatusOr<Batch> RowWindow::DecodeSegment(const Vector& seg, int index, int capacity, int cols,
                                               bool sparse, bool labels, bool targets) {
  if (seg.size() < kSegmentHeader) {
    return BadSegment(index, absl::StrCat("has fewer than ", kSegmentHeader, " entries"));
  }
  if (!IntegerIn(seg[0], 1, std::max(capacity, 1))) {
    return BadSegment(index, absl::StrCat("rows ", seg[0], ": expected a count in [1, ",
                                          std::max(capacity, 1), "]"));
  }
  const int k = static_cast<int>(seg[0]);
  const int64_t fields = (labels ? k : 0) + (targets ? k : 0);
  Batch b;
  b.sparse_features = sparse;
  for (int i = 2; i < kSegmentHeader; ++i) {
    if (seg[i] != 0.0) return BadSegment(index, absl::StrCat("header entry ", i, " must be 0"));
  }
  int64_t pos = kSegmentHeader;
  if (!sparse) {
    if (seg[1] != 0.0) return BadSegment(index, "nnz of a dense segment must be 0");
    const int64_t values = static_cast<int64_t>(k) * cols;
    if (seg.size() != kSegmentHeader + values + fields) {
      return BadSegment(index, absl::StrCat("has ", seg.size(), " entries, expected ",
                                            kSegmentHeader + values + fields, " (", k,
                                            " dense rows of ", cols, " columns and their fields)"));
    }
    if (absl::Status s = CheckInputNumbers(seg.data() + kSegmentHeader, values,
                                           absl::StrCat("aux[", index, "]"), cols);
        !s.ok()) {
      return s;
    }
    b.dense = Eigen::Map<const RowMatrix>(seg.data() + kSegmentHeader, k, cols);
    pos += values;
  } else {
    if (!IntegerIn(seg[1], 0, std::min(static_cast<double>(k) * cols, kMaxInt))) {
      return BadSegment(index, absl::StrCat("nnz ", seg[1], " outside [0, rows * cols]"));
    }
    const int64_t nnz = static_cast<int64_t>(seg[1]);
    if (seg.size() != kSegmentHeader + (k + 1) + 2 * nnz + fields) {
      return BadSegment(index, absl::StrCat("has ", seg.size(), " entries, expected ",
                                            kSegmentHeader + (k + 1) + 2 * nnz + fields, " (", k,
                                            " CSR rows with ", nnz, " entries and their fields)"));
    }
    std::vector<int64_t> indptr(static_cast<size_t>(k) + 1);
    for (int r = 0; r <= k; ++r, ++pos) {
      if (!IntegerIn(seg[pos], 0, static_cast<double>(nnz))) {
        return BadSegment(index, absl::StrCat("row offset ", r, " = ", seg[pos],
                                              " is not an integer in [0, nnz]"));
      }
      indptr[static_cast<size_t>(r)] = static_cast<int64_t>(seg[pos]);
    }
    std::vector<int32_t> indices(static_cast<size_t>(nnz));
    for (int64_t p = 0; p < nnz; ++p, ++pos) {
      if (!IntegerIn(seg[pos], 0, cols - 1)) {
        return BadSegment(index, absl::StrCat("column index ", p, " = ", seg[pos],
                                              " is not an integer in [0, cols)"));
      }
      indices[static_cast<size_t>(p)] = static_cast<int32_t>(seg[pos]);
    }
    absl::StatusOr<CsrMatrix> m =
        CheckedCsr(k, cols, std::move(indptr), std::move(indices),
                   std::vector<double>(seg.data() + pos, seg.data() + pos + nnz), index, index,
                   index, &BadSegment);
    if (!m.ok()) return m.status();
    b.csr = *std::move(m);
    pos += nnz;
  }
  if (labels) {
    for (int r = 0; r < k; ++r, ++pos) {
      if (!IntegerIn(seg[pos], 0, kMaxInt)) {
        return BadSegment(
            index, absl::StrCat("label ", r, " = ", seg[pos], " is not a non-negative integer"));
      }
      b.labels.push_back(static_cast<int32_t>(seg[pos]));
    }
  }
  if (targets) {
    if (absl::Status s =
            CheckInputNumbers(seg.data() + pos, k, absl::StrCat("aux[", index, "] targets"));
        !s.ok()) {
      return s;
    }
    b.targets = seg.segment(pos, k);
  }
  return b;
}

Vector RowWindow::PadUnpaddedSegment(const Vector& old) {
  if (old.size() < 2) return old;
  Vector out = Vector::Zero(old.size() + kSegmentHeader - 2);
  out.head(2) = old.head(2);
  out.tail(old.size() - 2) = old.tail(old.size() - 2);
  return out;
}

void RowWindow::Encode(std::vector<Vector>* out) const {
  const int n = size();
  const Batch rows = CopyRows();
  const bool csr = n > 0 && rows.sparse_features;
  const bool labels = n > 0 && labels_;
  const bool targets = n > 0 && targets_;
  const int64_t nnz = csr ? rows.csr.outerIndexPtr()[n] : 0;
  Vector header(kHeaderSize);
  header << (n == 0 ? kEmpty : (csr ? kCsr : kDense)), labels ? 1.0 : 0.0, targets ? 1.0 : 0.0, n,
      cols_, static_cast<double>(nnz);
  out->push_back(std::move(header));
  if (n == 0) {
    for (int k = 1; k < kEncodedVectors; ++k) out->emplace_back(0);
    return;
  }
  if (csr) {
    const CsrMatrix& m = rows.csr;
    out->push_back(Eigen::Map<const Vector>(m.valuePtr(), nnz));
    Vector outer(n + 1), inner(nnz);
    for (int r = 0; r <= n; ++r) outer[r] = m.outerIndexPtr()[r];
    for (int64_t p = 0; p < nnz; ++p) inner[p] = m.innerIndexPtr()[p];
    out->push_back(std::move(outer));
    out->push_back(std::move(inner));
  } else {
    out->push_back(Eigen::Map<const Vector>(rows.dense.data(), rows.dense.size()));
    out->emplace_back(0);
    out->emplace_back(0);
  }
  Vector fields((labels ? n : 0) + (targets ? n : 0));
  int pos = 0;
  if (labels) {
    for (int r = 0; r < n; ++r) fields[pos++] = rows.labels[static_cast<size_t>(r)];
  }
  if (targets) fields.segment(pos, n) = rows.targets;
  out->push_back(std::move(fields));
}

absl::StatusOr<RowWindow> RowWindow::Decode(const StateParts& aux, int first, int capacity,
                                            int cols) {
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
  Batch b;
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
    if (absl::Status s = CheckInputNumbers(values.data(), values.size(),
                                           absl::StrCat("aux[", first + 1, "]"), cols);
        !s.ok()) {
      return s;
    }
    b.dense = Eigen::Map<const RowMatrix>(values.data(), n, cols);
  } else {
    const double max_nnz = static_cast<double>(n) * cols;
    if (!IntegerIn(header[5], 0, std::min(max_nnz, kMaxInt))) {
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
        CheckedCsr(n, cols, std::move(indptr), std::move(indices),
                   std::vector<double>(values.data(), values.data() + nnz), first + 1, first + 2,
                   first + 3, &Bad);
    if (!m.ok()) return m.status();
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
      if (!IntegerIn(fields[pos], 0, kMaxInt)) {
        return Bad(first + 4,
                   absl::StrCat("label ", r, " = ", fields[pos], " is not a non-negative integer"));
      }
      b.labels.push_back(static_cast<int32_t>(fields[pos]));
    }
  }
  if (targets) {
    if (absl::Status s =
            CheckInputNumbers(fields.data() + pos, n, absl::StrCat("aux[", first + 4, "] targets"));
        !s.ok()) {
      return s;
    }
    b.targets = fields.segment(pos, n);
  }
  w.Append(b);
  return w;
}

}  // namespace f2obo
