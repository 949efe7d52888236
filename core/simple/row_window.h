// The last `capacity` rows of one kind (upper or inner) a session has seen:
// the finite sum IR-FSCG's SPIDER estimators and AGM-BiO's outer iterations
// work on when the data is a stream (issue 12), and what the class's metrics
// are evaluated on.  Rows keep the representation they came in (dense or
// CSR; a window holds one kind: the first batch appended fixes it), with
// their labels or targets.
//
// Durable: Encode/Decode write it to and read it from SessionState::aux
// vectors (kEncodedVectors of them), so a checkpoint resumes it exactly.
#ifndef F2OBO_CORE_SIMPLE_ROW_WINDOW_H_
#define F2OBO_CORE_SIMPLE_ROW_WINDOW_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/state_parts.h"
#include "core/types.h"

namespace f2obo {

class RowWindow {
 public:
  // How many aux vectors Encode writes.
  static constexpr int kEncodedVectors = 5;

  RowWindow() = default;
  RowWindow(int capacity, int cols) : capacity_(capacity), cols_(cols) {}

  // Appends the batch's rows (validated, `cols` wide), dropping the oldest
  // beyond capacity.  Cost: O(rows appended + rows dropped) amortized for
  // dense rows; O(window nnz) for CSR rows (the CSR is rebuilt).
  void Append(const Batch& b);
  // The rows in the window, oldest first (a Batch with dense or csr,
  // labels or targets set as the rows came).
  const Batch& rows() const { return rows_; }
  int size() const { return rows_.rows(); }
  int capacity() const { return capacity_; }

  // Writes kEncodedVectors vectors to `out` (appended); Decode reads them
  // back, checking shapes and values (INVALID_ARGUMENT naming "aux[i]");
  // `trusted`: the values of a window decoded and checked before are not
  // checked again (shapes and indices still are).
  void Encode(std::vector<Vector>* out) const;
  static absl::StatusOr<RowWindow> Decode(const StateParts& aux, int first, int capacity, int cols,
                                          bool trusted = false);

 private:
  int capacity_ = 0;
  int cols_ = 0;
  Batch rows_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ROW_WINDOW_H_
