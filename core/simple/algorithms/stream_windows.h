// The finite sum of the windowed simple bilevel algorithms (IR-FSCG,
// AGM-BiO) on a stream: the last W upper rows and the last W inner rows
// (core/simple/row_window.h), held in SessionState::aux so that a
// checkpoint resumes them exactly, and kept decoded between rounds.
//
// aux layout from `first` (a window as segment parts):
//   [first]      {upper_cols, inner_cols, 3}: the row widths (0 until the
//                first row of that kind arrives: a window learns its width
//                from its first rows, as the family has already checked
//                them) and the layout's version (3; older ones below);
//   [first + 1]  the upper window's header: {kind (0 empty, 1 dense, 2 CSR),
//                has_labels, has_targets, skip, s_1, ..., s_m}: its rows
//                are those of segments s_1 (oldest) to s_m, less the first
//                `skip` rows of s_1 (0 <= skip < rows of s_1);
//   [first + 2]  the inner window's header, likewise;
//   [first + 3 + s]  segment slot s: the rows one step appended to one
//                window (RowWindow::EncodeNewest: a header padded so that
//                the rows start on a cache line), or empty when no header
//                names it.  The slots end with the last one in use.
// Why segments: a step appends its rows as one new part and drops the
// parts of the rows it evicts, so what it writes (and the range check
// reads, and the store writes) is O(rows appended x cols), not the window;
// a window in one part would be rewritten whole at every step (copy on
// write copies what it writes).  The skip keeps a window exactly W rows
// when steps and W do not divide (the rows skipped stay in their segment
// until the rest of it is evicted: at most one segment's rows a window).
//
// Kept decoded: the windows are RowWindow buffers that live between rounds
// in this object (a dense window holds its rows' segment parts and reads
// the rows there: a step writes its rows once, into their segment).  A round uses them as they are
// when the state it starts from holds the very header parts the last round wrote (StateParts
// identity, see Load: this object keeps a copy of that state's parts, so a
// part it compares cannot have been freed and its address reused, nor
// written in place); otherwise (the first round of a restored or forked
// session, or a round after a refused one, whose rows were appended to the
// buffers and then thrown away) it decodes them from the state's
// segments, checked, O(window).  So a refused, cancelled or failed round
// leaves no trace: its state is discarded, and the buffers it touched no
// longer match the state the next round starts from.
//
// Older layouts, rewritten by Upgrade into version 3, rows unchanged:
//  * version 2 (states written before the segments' padding): the same
//    with segments of a 2-entry header ({k, nnz}), so their rows started
//    16 bytes past a cache line;
//  * version 1 (states written before segments): [first] {upper_cols,
//    inner_cols}, then the two windows in RowWindow's single-part layout
//    (5 vectors each).
//
// Restored windows are checked against the family once, when the state is
// restored (ValidateRows: the labels and widths of a state from outside
// must be ones the family accepts); rounds only append rows the family
// validated.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_

#include <deque>
#include <vector>

#include "absl/status/status.h"
#include "core/batch.h"
#include "core/simple/row_window.h"
#include "core/simple/simple_family.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

class StreamWindows {
 public:
  // The parts before the segment slots.
  static constexpr int kFixed = 3;
  // The layout written (aux[first][2]).
  static constexpr int kVersion = 3;
  // Version 1: the widths and 2 x RowWindow::kEncodedVectors vectors.
  static constexpr int kVersion1Vectors = 1 + 2 * RowWindow::kEncodedVectors;

  explicit StreamWindows(int capacity) : capacity_(capacity) {}

  // Appends the encoding of two empty windows to `aux`.
  void AppendInitial(StateParts* aux) const;
  // Whether aux[first, end) holds two windows of this capacity in this
  // layout (shapes and numbers); INVALID_ARGUMENT naming aux[i] otherwise.
  absl::Status Validate(const StateParts& aux, int first) const;
  // Whether the rows of the windows in aux (accepted by Validate) are ones
  // `family` accepts; INVALID_ARGUMENT naming the segment's aux otherwise.
  absl::Status ValidateRows(const StateParts& aux, int first, const SimpleFamily& family) const;
  // Rewrites windows of layout version 1 or 2 at aux[first, ...) into this
  // layout, rows unchanged; leaves any other aux as it is (Validate then
  // says what is wrong with it).  INVALID_ARGUMENT naming aux[i] when a
  // version-1 window does not decode.
  absl::Status Upgrade(StateParts* aux, int first) const;

  // The round's windows: brings the kept windows in line with aux (a state
  // accepted by Validate and ValidateRows), appends the step's rows and
  // writes their segments, the dropped segments (emptied) and the headers
  // into aux.  INVALID_ARGUMENT when a step's rows have another width than
  // their window's.
  absl::Status Append(StateParts* aux, int first, const StepData& data);

  // The windows' rows, oldest first (valid until the next Append).
  BatchView upper() const { return windows_[0].rows.view(); }
  BatchView inner() const { return windows_[1].rows.view(); }

 private:
  struct Window {
    RowWindow rows;
    std::deque<int> slots;     // its segments' slots, oldest first
    std::deque<int> segments;  // their rows
    int skip = 0;
  };

  // Decodes the windows of aux (version 2) into `windows_`, checking
  // everything; `family` (may be null) checks each segment's rows too.
  absl::Status Load(const StateParts& aux, int first, const SimpleFamily* family);
  void WriteHeader(int k, int first, StateParts* aux) const;

  int capacity_;
  int cols_[2] = {0, 0};
  Window windows_[2];
  // The state the kept windows stand for (a copy of its parts: see above);
  // empty when they stand for none.
  StateParts kept_;
  bool kept_valid_ = false;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_
