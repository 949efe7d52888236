// The finite sum of the windowed simple bilevel algorithms (IR-FSCG,
// AGM-BiO) on a stream: the last W upper rows and the last W inner rows
// (core/simple/row_window.h), held in SessionState::aux so that a
// checkpoint resumes them exactly.
//
// aux layout from `first`: [first] {upper_cols, inner_cols}, the row widths
// (0 until the first row of that kind arrives: a window learns its width
// from its first rows, as the family has already checked them);
// [first + 1, first + 6) the upper window's encoding; [first + 6,
// first + 11) the inner window's.
//
// A round decodes the windows, appends the step's rows and encodes them
// back: O(window nnz) copying per step.  Restored windows are checked
// against the family once, when the state is restored (ValidateRows: the
// labels and widths of a state from outside must be ones the family
// accepts); a round decodes them without checking their numbers or rows
// again (issue 23: re-checking every row every step was ~35% of an
// IR-FSCG step at W = 4,096, d = 1,000), since a state in memory holds only
// restored rows checked so and step rows the family validated.
#ifndef F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_
#define F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_

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
  static constexpr int kVectors = 1 + 2 * RowWindow::kEncodedVectors;

  explicit StreamWindows(int capacity) : capacity_(capacity) {}

  // Appends the encoding of two empty windows to `aux`.
  void AppendInitial(StateParts* aux) const;
  // Whether aux[first, first + kVectors) decodes as two windows of this
  // capacity; INVALID_ARGUMENT naming aux[i] otherwise.
  absl::Status Validate(const StateParts& aux, int first) const;

  // Whether the rows of the windows in aux (accepted by Validate) are ones
  // `family` accepts; INVALID_ARGUMENT naming the window's aux otherwise.
  absl::Status ValidateRows(const StateParts& aux, int first, const SimpleFamily& family) const;

  // Decodes the windows from aux (a state accepted by Validate and
  // ValidateRows: the rows are not checked again), then appends the step's
  // rows.
  absl::Status LoadAndAppend(const StateParts& aux, int first, SimpleFamily& family,
                             const StepData& data);
  // Writes the windows back to aux[first, first + kVectors).
  void Store(int first, StateParts* aux) const;

  const Batch& upper() const { return windows_[0].rows(); }
  const Batch& inner() const { return windows_[1].rows(); }

 private:
  // `trusted`: aux holds windows already checked (their numbers are not
  // read twice).
  absl::Status Decode(const StateParts& aux, int first, bool trusted);

  int capacity_;
  int cols_[2] = {0, 0};
  RowWindow windows_[2];
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ALGORITHMS_STREAM_WINDOWS_H_
