#include "core/batch.h"

#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace f2obo {

int64_t Batch::FeatureBytes() const {
  if (sparse_features) {
    return static_cast<int64_t>(csr.nonZeros()) *
               static_cast<int64_t>(sizeof(double) + sizeof(int)) +
           static_cast<int64_t>(csr.rows() + 1) * static_cast<int64_t>(sizeof(int));
  }
  return static_cast<int64_t>(dense.size()) * static_cast<int64_t>(sizeof(double));
}

absl::StatusOr<CsrMatrix> MakeCsr(int rows, int cols,
                                  const std::vector<int64_t>& indptr,
                                  const std::vector<int32_t>& indices,
                                  const std::vector<double>& values) {
  if (rows < 0 || cols < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: negative shape ", rows, " x ", cols));
  }
  if (indptr.size() != static_cast<size_t>(rows) + 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csr.indptr: has ", indptr.size(), " entries, expected rows + 1 = ",
        rows + 1));
  }
  if (indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("csr: ", indices.size(), " indices but ", values.size(),
                     " values"));
  }
  if (indptr.front() != 0 ||
      indptr.back() != static_cast<int64_t>(indices.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "csr.indptr: must start at 0 and end at nnz = ", indices.size(),
        ", got ", indptr.front(), " .. ", indptr.back()));
  }
  for (int r = 0; r < rows; ++r) {
    const int64_t begin = indptr[r], end = indptr[r + 1];
    if (end < begin) {
      return absl::InvalidArgumentError(
          absl::StrCat("csr.indptr: decreases at row ", r));
    }
    for (int64_t k = begin; k < end; ++k) {
      const int32_t col = indices[k];
      if (col < 0 || col >= cols) {
        return absl::InvalidArgumentError(absl::StrCat(
            "csr.indices[", k, "]: column ", col, " outside [0, ", cols, ")"));
      }
      if (k > begin && col <= indices[k - 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "csr.indices: row ", r, " columns not strictly increasing at ", k));
      }
      if (!std::isfinite(values[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat("csr.values[", k, "]: not finite"));
      }
    }
  }
  CsrMatrix m(rows, cols);
  m.resizeNonZeros(static_cast<Eigen::Index>(values.size()));
  for (int r = 0; r <= rows; ++r) {
    m.outerIndexPtr()[r] = static_cast<int>(indptr[r]);
  }
  for (size_t k = 0; k < values.size(); ++k) {
    m.innerIndexPtr()[k] = indices[k];
    m.valuePtr()[k] = values[k];
  }
  return m;
}

absl::Status ValidateFeatures(const Batch& b, int expected_cols,
                              const char* what) {
  if (b.rows() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": empty batch"));
  }
  if (b.cols() != expected_cols) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": rows have ", b.cols(),
                     " features, the session expects ", expected_cols));
  }
  if (b.sparse_features) {
    if (!b.csr.isCompressed()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": csr features must be compressed"));
    }
    const double* v = b.csr.valuePtr();
    for (Eigen::Index k = 0; k < b.csr.nonZeros(); ++k) {
      if (!std::isfinite(v[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, ": csr value ", k, " is not finite"));
      }
    }
  } else if (!b.dense.allFinite()) {
    for (Eigen::Index r = 0; r < b.dense.rows(); ++r) {
      for (Eigen::Index j = 0; j < b.dense.cols(); ++j) {
        if (!std::isfinite(b.dense(r, j))) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, ": feature (row ", r, ", column ", j, ") is not finite"));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateLabels(const Batch& b, int classes, const char* what) {
  if (b.labels.size() != static_cast<size_t>(b.rows())) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", b.labels.size(), " labels for ", b.rows(),
                     " rows"));
  }
  for (size_t i = 0; i < b.labels.size(); ++i) {
    if (b.labels[i] < 0 || b.labels[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": label[", i, "] = ", b.labels[i],
                       " outside [0, ", classes, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTargets(const Batch& b, const char* what) {
  if (b.targets.size() != b.rows()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", b.targets.size(), " targets for ", b.rows(),
                     " rows"));
  }
  for (Eigen::Index i = 0; i < b.targets.size(); ++i) {
    if (!std::isfinite(b.targets[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": target[", i, "] is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo
