// The entries of a batch row, for RowWindow's storage conversions
// (row_window.cc, row_window_csr.cc); internal to the window.
#ifndef F2OBO_CORE_SIMPLE_ROW_WINDOW_ENTRIES_H_
#define F2OBO_CORE_SIMPLE_ROW_WINDOW_ENTRIES_H_

#include "core/batch.h"

namespace f2obo {
namespace row_window_internal {

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
  const double* row = b.DenseRow(i);
  for (int j = 0; j < b.cols(); ++j) {
    const double v = row[j];
    if (!nonzero_only || v != 0.0) fn(j, v);
  }
}

}  // namespace row_window_internal
}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_ROW_WINDOW_ENTRIES_H_
