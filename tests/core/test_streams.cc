#include "tests/core/test_streams.h"

#include <Eigen/QR>

#include "core/bilevel/bilevel_family_registry.h"
#include "core/problem_registry.h"
#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo::testing {

Matrix WellConditioned(int m, int n, double lo, double hi, std::mt19937_64& rng) {
  const Matrix a = RandomMatrix(m, m, rng);
  const Matrix b = RandomMatrix(n, n, rng);
  const Matrix q1 = Eigen::HouseholderQR<Matrix>(a).householderQ();
  const Matrix q2 = Eigen::HouseholderQR<Matrix>(b).householderQ();
  // Singular values on the diagonal of the m x n middle factor: min(m, n) of
  // them (looping to n wrote past the matrix when m < n).
  const int k = std::min(m, n);
  Matrix s = Matrix::Zero(m, n);
  for (int i = 0; i < k; ++i) s(i, i) = lo + (hi - lo) * i / std::max(1, k - 1);
  return q1 * s * q2.transpose();
}

StepData QuadraticStep(const Matrix& M, const Vector& c, const Vector& d) {
  StepData s;
  s.inner.M = M;
  s.inner.c = c;
  s.upper.d = d;
  return s;
}

Batch RegressionBatch(int rows, const Vector& w, double noise, bool sparse, std::mt19937_64& rng) {
  Batch b;
  const RowMatrix a = RandomMatrix(rows, static_cast<int>(w.size()), rng);
  b.targets = a * w + noise * RandomVector(rows, rng);
  b.sparse_features = sparse;
  if (sparse) {
    b.csr = a.sparseView();
    b.csr.makeCompressed();
  } else {
    b.dense = a;
  }
  return b;
}

Batch ClassificationBatch(int rows, int features, int classes, bool sparse, std::mt19937_64& rng) {
  Batch b;
  RowMatrix a = RandomMatrix(rows, features, rng);
  std::uniform_int_distribution<int> label(0, classes - 1);
  b.labels.resize(rows);
  for (int i = 0; i < rows; ++i) {
    b.labels[i] = label(rng);
    a(i, b.labels[i] % features) += 2.0;  // class-dependent mean
  }
  b.sparse_features = sparse;
  if (sparse) {
    b.csr = a.sparseView();
    b.csr.makeCompressed();
  } else {
    b.dense = a;
  }
  return b;
}

SessionConfig ConfigFor(const std::string& algorithm, const FamilyConfig& family,
                        const ConstraintSet& set) {
  SessionConfig c;
  c.family = family;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  c.constraint = set;
  return c;
}

std::unique_ptr<BilevelFamily> PreparedFamily(const Session& session, const StepData& data) {
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(session.config().family);
  family->Prepare(data);
  return family;
}

SessionState BilevelState(const Vector& x, const Vector& y, const Vector& z, double lambda,
                          uint64_t seed) {
  SessionState s;
  s.x = x;
  s.vectors = {y, z};
  s.scalars = {lambda};
  s.rng = Rng(seed);
  return s;
}

}  // namespace f2obo::testing
