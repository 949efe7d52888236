// Labelled datasets read from files, for replaying as drifting streams.
// Formats: IDX (MNIST / Fashion-MNIST, optionally gzip-compressed), LibSVM
// (sparse "label idx:val ..." lines) and CSV (numeric, label in a column).
#ifndef F2OBO_CLIENT_DATA_DATASET_H_
#define F2OBO_CLIENT_DATA_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/types.h"

namespace f2obo::data {

struct Dataset {
  bool sparse = false;
  RowMatrix dense;              // rows x features when !sparse
  CsrMatrix csr;                // rows x features when sparse
  Vector targets;               // numeric label per row (always set)
  std::vector<int32_t> labels;  // class per row; empty if targets are not
                                // non-negative integers (regression data)
  int classes = 0;              // 1 + max label (0 without labels)

  int rows() const { return static_cast<int>(targets.size()); }
  int features() const { return static_cast<int>(sparse ? csr.cols() : dense.cols()); }
};

// IDX image + label files (gzip or plain).  Pixels are scaled to [0, 1].
absl::StatusOr<Dataset> ReadIdx(const std::string& images_path, const std::string& labels_path);

// LibSVM/SVMlight text.  Feature indices are 1-based; `features` = 0 takes
// the largest index seen.  Labels must be integers >= 0 (class indices).
absl::StatusOr<Dataset> ReadLibsvm(const std::string& path, int features = 0);

// CSV of numbers; `label_column` (negative counts from the end, -1 = last)
// holds the target (a class label when it is a non-negative integer).  A first line that does not
// parse as numbers is taken as a header.
absl::StatusOr<Dataset> ReadCsv(const std::string& path, int label_column = -1);

// Reads by extension: *.csv, *.svm / *.libsvm / *.txt, or an IDX pair given
// as "images_path,labels_path".
absl::StatusOr<Dataset> ReadDataset(const std::string& spec);

}  // namespace f2obo::data

#endif  // F2OBO_CLIENT_DATA_DATASET_H_
