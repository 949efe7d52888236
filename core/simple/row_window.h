// The last `capacity` rows of one kind (upper or inner) a session has seen:
// the finite sum IR-FSCG's SPIDER estimators and AGM-BiO's outer iterations
// work on when the data is a stream, and what the class's metrics
// are evaluated on.  Rows keep the representation they came in (dense or
// CSR; a window holds one kind: the first batch appended fixes it), with
// their labels or targets.
//
// Storage: the window is kept between steps and appending
// costs what is appended, O(rows appended x cols), never O(window):
//  * dense rows are held by address (Batch::row_ptrs, a ring of `capacity`
//    row addresses, grown up to it while the window fills), in blocks the
//    window keeps alive until it drops their last row: a copy of the
//    appended rows (Append), or the state part that holds them as a
//    segment (AppendSegment, AppendAsSegment: the rows are read where the
//    session's state keeps them, not copied a second time);
//  * CSR rows are appended behind the live rows in a buffer of 2 x capacity
//    rows whose entry storage grows geometrically; when either runs out, the
//    live rows are moved to the front (once every ~capacity / k appends of k
//    rows: amortized O(appended entries)).
// So the live rows are not contiguous: view() names them, oldest first, by
// their rows in the buffer (RowSet indices).  The simple families read a
// view row by row (RowDot, RowAxpy: the same operations in the same order
// wherever a row is stored, whatever its alignment), so a round on view()
// computes bit for bit what it computed on a contiguous copy.
//
// Durable form: the session state keeps a window as segment parts
// (core/simple/algorithms/stream_windows.h); Encode/Decode below are the
// single-part layout of states written before that, read only to upgrade
// them.
#ifndef F2OBO_CORE_SIMPLE_ROW_WINDOW_H_
#define F2OBO_CORE_SIMPLE_ROW_WINDOW_H_

#include <deque>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

class RowWindow {
 public:
  // How many aux vectors the legacy encoding takes.
  static constexpr int kEncodedVectors = 5;

  RowWindow() = default;
  RowWindow(int capacity, int cols) : capacity_(capacity), cols_(cols) {}

  // Appends rows [from, rows) of the batch (validated, `cols` wide), dropping
  // the oldest beyond capacity (a batch of more rows than that keeps its last
  // ones).  O(rows appended x cols) amortized, whatever the window holds.
  void Append(const Batch& b, int from = 0);
  // Rows [from, k) of a dense segment (the layout below; `labels`,
  // `targets`: which fields it has) that DecodeSegment accepted for this
  // window's width, appended without copying them: the window keeps
  // `segment` until it drops their last row, and reads them there (the
  // segment must not be written while the window holds it: a shared state
  // part is not).  A window with rows must be dense with the same fields.
  void AppendSegment(std::shared_ptr<const Vector> segment, int from, bool labels, bool targets);
  // The entries AppendAsSegment(b) writes.
  int64_t SegmentSize(const Batch& b) const;
  // Append(b), and the segment of the rows it appended (EncodeNewest of
  // them) written into *segment, SegmentSize(b) entries allocated by the
  // caller; `owner` owns *segment.  A dense window then keeps its new rows
  // in the segment (AppendSegment) instead of in a copy of its own.
  void AppendAsSegment(const Batch& b, Vector* segment, std::shared_ptr<const Vector> owner);
  // The rows in the window, oldest first: a view into the window's buffer,
  // valid until the next Append.
  BatchView view() const;
  // The same rows as a contiguous Batch (a copy: O(window); for tests,
  // validation and the legacy encoding).
  Batch CopyRows() const;
  int size() const { return n_; }
  int capacity() const { return capacity_; }
  int cols() const { return cols_; }
  // The storage and fields the first rows fixed (meaningful when size() > 0).
  bool sparse() const { return buf_.sparse_features; }
  bool has_labels() const { return labels_; }
  bool has_targets() const { return targets_; }
  // Segments: the durable form of a run of rows (stream_windows.h keeps a
  // window as the segments of its appends).  One vector:
  //   [0] k, the rows (>= 1);  [1] nnz (CSR; 0 for dense);
  //   [2, kSegmentHeader) 0: padding, so that the rows start 64 bytes into
  //   the part, on a cache line (Eigen allocates vectors 64-byte aligned on
  //   AVX-512 builds): a window reads its dense rows in the segment, and a
  //   row of a multiple of 8 columns then loads without a vector straddling
  //   two lines (with a 2-entry header every load of a 64-byte vector did:
  //   AGM-BiO's passes took 25-35% longer, IR-FSCG's step ~7%);
  //   dense: k x cols values, row-major;
  //   CSR: k + 1 row offsets, nnz column indices, nnz values;
  //   then k labels if the window keeps labels, then k targets if it keeps
  //   targets.
  // Integers are stored as doubles (exact below 2^53).
  static constexpr int kSegmentHeader = 8;
  // A segment of the layout before the padding ([0] k, [1] nnz, then the
  // body as above: StreamWindows' layout version 2) in this one, its
  // entries unchanged; a vector of fewer than 2 entries is returned as it
  // is (DecodeSegment then refuses it).
  static Vector PadUnpaddedSegment(const Vector& old);
  // EncodeNewest writes the window's `count` newest rows, oldest first.
  void EncodeNewest(int count, Vector* out) const;
  // The entries EncodeNewest(count) writes.
  int64_t EncodedSize(int count) const;
  // A segment's rows as a Batch of the given storage and fields, checking
  // shapes and values (INVALID_ARGUMENT "aux[<index>]: ...").
  static absl::StatusOr<Batch> DecodeSegment(const Vector& segment, int index, int capacity,
                                             int cols, bool sparse, bool labels, bool targets);

  // Legacy single-part layout (kEncodedVectors vectors): Encode appends
  // them to `out`; Decode reads them back, checking shapes and values
  // (INVALID_ARGUMENT naming "aux[i]").
  void Encode(std::vector<Vector>* out) const;
  static absl::StatusOr<RowWindow> Decode(const StateParts& aux, int first, int capacity, int cols);

 private:
  // A block of dense rows the window reads and keeps alive (`keep`: a
  // segment; or `copy`: rows Append copied, recycled once dropped), and
  // how many of the live rows are in it.
  struct Owner {
    std::shared_ptr<const void> keep;
    std::shared_ptr<RowMatrix> copy;
    int rows = 0;
  };

  // Buffer row of the window's k-th row (oldest first).
  int Physical(int k) const { return order_[static_cast<size_t>(start_ + k)]; }
  // Fixes the storage and fields of an empty window.
  void Reset(bool sparse, bool labels, bool targets);
  void AppendDense(const Batch& b, int first_new, int take);
  // Makes room for `take` dense rows (dropping the oldest beyond capacity,
  // and their owners with their last row) and records `owner` for them; the
  // caller then fills their slots Physical(n_ - take + r).
  void PushDense(int take, Owner owner);
  void AppendCsr(const Batch& b, int first_new, int take);
  // The CSR buffer with the live rows moved to the front and room for
  // `extra_nnz` more entries.
  void CompactCsr(int64_t extra_nnz);
  void SetOrder(int rows, bool ring);

  int capacity_ = 0;
  int cols_ = 0;
  bool labels_ = false, targets_ = false;
  Batch buf_;                 // dense address ring or CSR buffer, labels / targets by buffer row
  int start_ = 0, n_ = 0;     // the live rows: order_[start_, start_ + n_)
  int64_t nnz_cap_ = 0;       // CSR: entries the buffer has room for
  std::vector<int> order_;    // buffer row of position p (dense: p mod ring size)
  std::deque<Owner> owners_;  // dense: the live rows' blocks, oldest first
  std::shared_ptr<RowMatrix> spare_;  // dense: a dropped copy block, for the next copy
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ROW_WINDOW_H_
