// RowWindow's CSR buffer (core/simple/row_window.h): rows appended behind
// the live ones in a buffer of 2 x capacity rows, the live rows moved to
// the front when the rows or the entry storage run out.
#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/simple/row_window.h"
#include "core/simple/row_window_entries.h"

namespace f2obo {

using row_window_internal::ForEachEntry;

void RowWindow::AppendCsr(const Batch& b, int first_new, int take) {
  int64_t extra = 0;
  for (int r = 0; r < take; ++r) {
    ForEachEntry(b, first_new + r, true, [&](int, double) { ++extra; });
  }
  // Drop the oldest rows first: they are not moved by a compaction.
  const int keep = std::min(n_, capacity_ - take);
  start_ += n_ - keep;
  n_ = keep;
  const int rows = 2 * capacity_;
  const bool allocated = buf_.csr.rows() == rows;
  const int64_t end = allocated ? buf_.csr.outerIndexPtr()[start_ + n_] : 0;
  if (!allocated || start_ + n_ + take > rows || end + extra > nnz_cap_) CompactCsr(extra);
  int* outer = buf_.csr.outerIndexPtr();
  int* inner = buf_.csr.innerIndexPtr();
  double* val = buf_.csr.valuePtr();
  int pos = outer[start_ + n_];
  for (int r = 0; r < take; ++r) {
    const int i = first_new + r;
    const int p = start_ + n_ + r;
    ForEachEntry(b, i, true, [&](int j, double v) {
      inner[pos] = j;
      val[pos++] = v;
    });
    outer[p + 1] = pos;
    if (labels_) buf_.labels[static_cast<size_t>(p)] = b.labels.empty() ? 0 : b.labels[i];
    if (targets_) buf_.targets[p] = b.targets.size() > 0 ? b.targets[i] : 0.0;
  }
  n_ += take;
}

void RowWindow::CompactCsr(int64_t extra) {
  const int rows = 2 * capacity_;
  const int* op = buf_.csr.outerIndexPtr();
  const int64_t base = n_ > 0 ? op[start_] : 0;
  const int64_t live = n_ > 0 ? op[start_ + n_] - base : 0;
  // Room for as many entries again as the live and new ones: the next
  // compaction for lack of room comes after that many more.
  const int64_t cap =
      std::min<int64_t>(std::max<int64_t>(2 * (live + extra), 64), std::numeric_limits<int>::max());
  CsrMatrix next(rows, cols_);  // row offsets 0
  next.resizeNonZeros(static_cast<Eigen::Index>(cap));
  Vector targets = targets_ ? Vector(rows) : Vector();
  std::vector<int32_t> labels(labels_ ? static_cast<size_t>(rows) : 0);
  if (n_ > 0) {
    std::memcpy(next.innerIndexPtr(), buf_.csr.innerIndexPtr() + base,
                sizeof(int) * static_cast<size_t>(live));
    std::memcpy(next.valuePtr(), buf_.csr.valuePtr() + base,
                sizeof(double) * static_cast<size_t>(live));
    int* outer = next.outerIndexPtr();
    for (int r = 0; r < n_; ++r) outer[r + 1] = static_cast<int>(op[start_ + r + 1] - base);
    if (targets_) targets.head(n_) = buf_.targets.segment(start_, n_);
    if (labels_) {
      std::copy(buf_.labels.begin() + start_, buf_.labels.begin() + start_ + n_, labels.begin());
    }
  }
  buf_.csr = std::move(next);
  buf_.targets = std::move(targets);
  buf_.labels = std::move(labels);
  start_ = 0;
  nnz_cap_ = cap;
  if (order_.size() != static_cast<size_t>(rows)) SetOrder(rows, /*ring=*/false);
}

}  // namespace f2obo
