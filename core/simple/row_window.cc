// RowWindow (core/simple/row_window.h): appending, the dense address ring,
// the view and the copies out.  The CSR buffer is in row_window_csr.cc,
// the durable forms (segments, legacy layout) in row_window_codec.cc.
//
// Choices:
//  * Kind: the first non-empty batch fixes dense or CSR, and which of labels
//    and targets the window keeps; later batches of the other storage are
//    converted (dense -> CSR keeps the non-zero entries, CSR -> dense
//    scatters), and a kept field a later batch lacks is filled with 0 (the
//    family's ValidateBatch makes that impossible on a session's path).
//    An empty window has no kind: size() == 0 means "not fixed yet" (with
//    capacity > 0 a window never empties once filled).
//  * Rows are copied as they are (a plain copy of each value), into the
//    window's blocks or into a segment: where a row sits changes no number
//    a family computes from it (see the header).
//  * Dense rows appended from a batch are copied into one block per append
//    (the block of a dropped append is reused when it has the size: steps
//    of a stream have the same rows).
//  * Rows of another width than `cols` are ignored (callers append
//    validated batches; this only keeps a bad call from writing out of
//    bounds).
#include "core/simple/row_window.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/simple/row_window_entries.h"

namespace f2obo {

using row_window_internal::ForEachEntry;

void RowWindow::SetOrder(int rows, bool ring) {
  order_.resize(static_cast<size_t>(ring ? 2 * rows : rows));
  for (size_t p = 0; p < order_.size(); ++p) order_[p] = static_cast<int>(p % rows);
}

void RowWindow::Reset(bool sparse, bool labels, bool targets) {
  // The first rows fix the window's storage and fields; afterwards they
  // are read off the window itself (it never empties again).
  buf_ = Batch();
  buf_.sparse_features = sparse;
  buf_.row_cols = cols_;
  labels_ = labels;
  targets_ = targets;
  start_ = 0;
  nnz_cap_ = 0;
  order_.clear();
  owners_.clear();
}

void RowWindow::Append(const Batch& b, int from) {
  const int k = b.rows();
  if (k <= from || from < 0 || capacity_ <= 0 || b.cols() != cols_) return;
  if (n_ == 0) Reset(b.sparse_features, !b.labels.empty(), b.targets.size() > 0);
  const int take = std::min(k - from, capacity_);  // the batch's last `take` rows
  if (buf_.sparse_features) {
    AppendCsr(b, k - take, take);
  } else {
    AppendDense(b, k - take, take);
  }
}

void RowWindow::PushDense(int take, Owner owner) {
  int ring = static_cast<int>(buf_.row_ptrs.size());
  if (n_ + take > ring && ring < capacity_) {
    // Still filling: nothing was dropped yet (start_ == 0), the live rows
    // are the buffer's first n_ rows, and growing keeps them in place.
    ring = std::min(capacity_, std::max(2 * ring, n_ + take));
    buf_.row_ptrs.resize(static_cast<size_t>(ring), nullptr);
    if (labels_) buf_.labels.resize(static_cast<size_t>(ring));
    if (targets_) buf_.targets.conservativeResize(ring);
    SetOrder(ring, /*ring=*/true);
  }
  const int keep = std::min(n_, capacity_ - take);  // the newest `keep` old rows
  for (int drop = n_ - keep; drop > 0;) {
    Owner& o = owners_.front();
    const int d = std::min(drop, o.rows);
    o.rows -= d;
    drop -= d;
    if (o.rows > 0) break;
    if (o.copy != nullptr && o.copy.use_count() == 1) spare_ = std::move(o.copy);
    owners_.pop_front();
  }
  start_ = (start_ + n_ - keep) % ring;
  n_ = keep + take;
  owner.rows = take;
  owners_.push_back(std::move(owner));
}

void RowWindow::AppendDense(const Batch& b, int first_new, int take) {
  std::shared_ptr<RowMatrix> block = std::move(spare_);
  if (block == nullptr || block->rows() != take || block->cols() != cols_) {
    block = std::make_shared<RowMatrix>(take, cols_);
  }
  for (int r = 0; r < take; ++r) {
    double* row = block->data() + static_cast<int64_t>(r) * cols_;
    if (b.sparse_features) {
      std::fill(row, row + cols_, 0.0);
      ForEachEntry(b, first_new + r, false, [&](int j, double v) { row[j] = v; });
    } else {
      std::memcpy(row, b.DenseRow(first_new + r), sizeof(double) * static_cast<size_t>(cols_));
    }
  }
  const double* rows = block->data();
  PushDense(take, Owner{nullptr, std::move(block), 0});
  for (int r = 0; r < take; ++r) {
    const int i = first_new + r;
    const int p = Physical(n_ - take + r);
    buf_.row_ptrs[static_cast<size_t>(p)] = rows + static_cast<int64_t>(r) * cols_;
    if (labels_) buf_.labels[static_cast<size_t>(p)] = b.labels.empty() ? 0 : b.labels[i];
    if (targets_) buf_.targets[p] = b.targets.size() > 0 ? b.targets[i] : 0.0;
  }
}

void RowWindow::AppendSegment(std::shared_ptr<const Vector> segment, int from, bool labels,
                              bool targets) {
  if (capacity_ <= 0 || segment == nullptr || segment->size() < kSegmentHeader) return;
  const int k = static_cast<int>((*segment)[0]);
  if (k <= from || from < 0) return;
  if (n_ == 0) Reset(/*sparse=*/false, labels, targets);
  if (buf_.sparse_features) return;  // not this window's storage
  const int take = std::min(k - from, capacity_);
  const int first = k - take;
  const double* rows = segment->data() + kSegmentHeader;
  const int64_t values = static_cast<int64_t>(k) * cols_;
  const double* label = labels ? rows + values : nullptr;
  const double* target = targets ? rows + values + (labels ? k : 0) : nullptr;
  PushDense(take, Owner{std::move(segment), nullptr, 0});
  for (int r = 0; r < take; ++r) {
    const int i = first + r;
    const int p = Physical(n_ - take + r);
    buf_.row_ptrs[static_cast<size_t>(p)] = rows + static_cast<int64_t>(i) * cols_;
    if (labels_) {
      buf_.labels[static_cast<size_t>(p)] = label != nullptr ? static_cast<int32_t>(label[i]) : 0;
    }
    if (targets_) buf_.targets[p] = target != nullptr ? target[i] : 0.0;
  }
}

namespace {

// Whether appending b to a window (capacity, cols, its size and storage)
// appends dense rows.
bool AppendsDense(const Batch& b, int capacity, int cols, int size, bool sparse) {
  return b.rows() > 0 && capacity > 0 && b.cols() == cols &&
         !(size > 0 ? sparse : b.sparse_features);
}

}  // namespace

int64_t RowWindow::SegmentSize(const Batch& b) const {
  const int take = std::min(b.rows(), capacity_);
  if (AppendsDense(b, capacity_, cols_, n_, buf_.sparse_features)) {
    const bool labels = n_ > 0 ? labels_ : !b.labels.empty();
    const bool targets = n_ > 0 ? targets_ : b.targets.size() > 0;
    return kSegmentHeader + static_cast<int64_t>(take) * cols_ + (labels ? take : 0) +
           (targets ? take : 0);
  }
  if (b.rows() == 0 || capacity_ <= 0 || b.cols() != cols_) {
    return EncodedSize(take);  // nothing is appended
  }
  // A CSR window: the entries its append keeps.
  const bool labels = n_ > 0 ? labels_ : !b.labels.empty();
  const bool targets = n_ > 0 ? targets_ : b.targets.size() > 0;
  int64_t nnz = 0;
  for (int i = b.rows() - take; i < b.rows(); ++i) {
    ForEachEntry(b, i, true, [&](int, double) { ++nnz; });
  }
  return kSegmentHeader + (take + 1) + 2 * nnz + (labels ? take : 0) + (targets ? take : 0);
}

void RowWindow::AppendAsSegment(const Batch& b, Vector* segment,
                                std::shared_ptr<const Vector> owner) {
  const int take = std::min(b.rows(), capacity_);
  if (!AppendsDense(b, capacity_, cols_, n_, buf_.sparse_features)) {
    Append(b);
    EncodeNewest(take, segment);
    return;
  }
  // The segment written straight from the batch, in one pass; the window
  // then reads its rows there.
  const bool labels = n_ > 0 ? labels_ : !b.labels.empty();
  const bool targets = n_ > 0 ? targets_ : b.targets.size() > 0;
  const int first = b.rows() - take;
  double* o = segment->data();
  o[0] = take;
  std::fill(o + 1, o + kSegmentHeader, 0.0);  // nnz and the padding
  for (int r = 0; r < take; ++r) {
    double* row = o + kSegmentHeader + static_cast<int64_t>(r) * cols_;
    if (b.sparse_features) {
      std::fill(row, row + cols_, 0.0);
      ForEachEntry(b, first + r, false, [&](int j, double v) { row[j] = v; });
    } else {
      std::memcpy(row, b.DenseRow(first + r), sizeof(double) * static_cast<size_t>(cols_));
    }
  }
  int64_t pos = kSegmentHeader + static_cast<int64_t>(take) * cols_;
  if (labels) {
    for (int r = 0; r < take; ++r) o[pos++] = b.labels.empty() ? 0 : b.labels[first + r];
  }
  if (targets) {
    for (int r = 0; r < take; ++r) o[pos++] = b.targets.size() > 0 ? b.targets[first + r] : 0.0;
  }
  AppendSegment(std::move(owner), 0, labels, targets);
}

BatchView RowWindow::view() const {
  if (n_ == 0) return BatchView{&buf_, RowSet{nullptr, 0}};
  return BatchView{&buf_, RowSet{order_.data() + start_, n_}};
}

Batch RowWindow::CopyRows() const {
  Batch out;
  if (n_ == 0) return out;
  out.sparse_features = buf_.sparse_features;
  if (buf_.sparse_features) {
    const int* op = buf_.csr.outerIndexPtr();
    const int base = op[start_];
    const int nnz = op[start_ + n_] - base;
    out.csr = CsrMatrix(n_, cols_);
    out.csr.resizeNonZeros(nnz);
    std::memcpy(out.csr.innerIndexPtr(), buf_.csr.innerIndexPtr() + base,
                sizeof(int) * static_cast<size_t>(nnz));
    std::memcpy(out.csr.valuePtr(), buf_.csr.valuePtr() + base,
                sizeof(double) * static_cast<size_t>(nnz));
    for (int r = 0; r <= n_; ++r) out.csr.outerIndexPtr()[r] = op[start_ + r] - base;
  } else {
    out.dense.resize(n_, cols_);
    for (int r = 0; r < n_; ++r) {
      std::memcpy(out.dense.row(r).data(), buf_.DenseRow(Physical(r)),
                  sizeof(double) * static_cast<size_t>(cols_));
    }
  }
  if (labels_) {
    for (int r = 0; r < n_; ++r)
      out.labels.push_back(buf_.labels[static_cast<size_t>(Physical(r))]);
  }
  if (targets_) {
    out.targets.resize(n_);
    for (int r = 0; r < n_; ++r) out.targets[r] = buf_.targets[Physical(r)];
  }
  return out;
}

int64_t RowWindow::EncodedSize(int count) const {
  count = std::max(0, std::min(count, n_));
  const bool csr = buf_.sparse_features;
  int64_t body = static_cast<int64_t>(count) * cols_;
  if (csr) {
    const int* op = buf_.csr.outerIndexPtr();
    const int64_t nnz = count > 0 ? op[Physical(n_ - 1) + 1] - op[Physical(n_ - count)] : 0;
    body = count + 1 + 2 * nnz;
  }
  return kSegmentHeader + body + (labels_ ? count : 0) + (targets_ ? count : 0);
}

void RowWindow::EncodeNewest(int count, Vector* out) const {
  count = std::max(0, std::min(count, n_));
  const int from = n_ - count;
  const bool csr = buf_.sparse_features;
  const int* op = csr ? buf_.csr.outerIndexPtr() : nullptr;
  // CSR rows are contiguous in the buffer (order_ is the identity there).
  const int base = csr && count > 0 ? op[Physical(from)] : 0;
  const int64_t nnz = csr && count > 0 ? op[Physical(n_ - 1) + 1] - base : 0;
  out->resize(EncodedSize(count));  // no allocation when it has that size
  double* o = out->data();
  o[0] = count;
  o[1] = static_cast<double>(nnz);
  std::fill(o + 2, o + kSegmentHeader, 0.0);
  int64_t pos = kSegmentHeader;
  if (csr) {
    const int p0 = count > 0 ? Physical(from) : 0;
    for (int r = 0; r <= count; ++r) o[pos++] = op[p0 + r] - base;
    for (int64_t e = 0; e < nnz; ++e) o[pos++] = buf_.csr.innerIndexPtr()[base + e];
    if (nnz > 0) std::memcpy(o + pos, buf_.csr.valuePtr() + base, sizeof(double) * nnz);
    pos += nnz;
  } else {
    for (int r = 0; r < count; ++r, pos += cols_) {
      std::memcpy(o + pos, buf_.DenseRow(Physical(from + r)),
                  sizeof(double) * static_cast<size_t>(cols_));
    }
  }
  if (labels_) {
    for (int r = 0; r < count; ++r) o[pos++] = buf_.labels[static_cast<size_t>(Physical(from + r))];
  }
  if (targets_) {
    for (int r = 0; r < count; ++r) o[pos++] = buf_.targets[Physical(from + r)];
  }
}

}  // namespace f2obo
