// Eigen aliases shared by every core module.
#ifndef F2OBO_CORE_TYPES_H_
#define F2OBO_CORE_TYPES_H_

#include <Eigen/Core>
#include <Eigen/SparseCore>

namespace f2obo {

using Vector = Eigen::VectorXd;
using Matrix = Eigen::MatrixXd;
// Dense feature rows: one sample per row, contiguous.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// CSR features: one sample per (compressed) row.
using CsrMatrix = Eigen::SparseMatrix<double, Eigen::RowMajor, int>;

// Read-only view of a vector argument (no copy for Vector, segments, maps).
using VecIn = Eigen::Ref<const Vector>;

}  // namespace f2obo

#endif  // F2OBO_CORE_TYPES_H_
