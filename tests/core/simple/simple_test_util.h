// Helpers shared by the simple bilevel family and row window tests.
#ifndef F2OBO_TESTS_CORE_SIMPLE_SIMPLE_TEST_UTIL_H_
#define F2OBO_TESTS_CORE_SIMPLE_SIMPLE_TEST_UTIL_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/batch.h"
#include "core/simple/row_window.h"
#include "core/simple/simple_family.h"
#include "core/simple/simple_registries.h"
#include "core/state_parts.h"
#include "tests/core/bilevel/families/family_checks.h"

namespace f2obo::testing {

// The row windows at aux[first, ...) (core/simple/algorithms/
// stream_windows.h) as servers before the segments' padding wrote them,
// window layout version 2: the version 2, each segment's header {k, nnz}
// without the padding (which must be zeros).  False if it is not there.
inline bool ToWindowLayoutVersion2(StateParts* aux, size_t first) {
  const StateParts& in = *aux;
  if (in.size() < first + 3 || in[first].size() != 3 || in[first][2] != 3.0) return false;
  (*aux)[first][2] = 2.0;
  constexpr int kPad = RowWindow::kSegmentHeader - 2;
  for (size_t i = first + 3; i < in.size(); ++i) {
    const Vector s = in[i];
    if (s.size() == 0) continue;
    if (s.size() < RowWindow::kSegmentHeader || !s.segment(2, kPad).isZero(0.0)) return false;
    Vector unpadded(s.size() - kPad);
    unpadded << s.head(2), s.tail(s.size() - RowWindow::kSegmentHeader);
    aux->Set(i, std::move(unpadded));
  }
  return true;
}

inline std::unique_ptr<SimpleFamily> MakeSimpleFamily(const std::string& name, int features,
                                                      int classes = 0) {
  FamilyConfig c;
  c.name = name;
  c.features = features;
  c.classes = classes;
  auto f = CreateSimpleFamily(c);
  return f.ok() ? std::move(f).value() : nullptr;
}

// A dense regression batch with Gaussian rows and targets.
inline Batch DenseRegression(int rows, int cols, std::mt19937_64& rng) {
  Batch b;
  b.dense = RandomMatrix(rows, cols, rng);
  b.targets = RandomVector(rows, rng);
  return b;
}

// The same rows as CSR (explicit zeros dropped).
inline Batch AsCsr(const Batch& dense) {
  Batch b = dense;
  b.sparse_features = true;
  b.csr = dense.dense.sparseView();
  b.csr.makeCompressed();
  b.dense.resize(0, 0);
  return b;
}

inline Batch DenseClassification(int rows, int cols, int classes, std::mt19937_64& rng) {
  Batch b;
  b.dense = RandomMatrix(rows, cols, rng);
  std::uniform_int_distribution<int> label(0, classes - 1);
  for (int i = 0; i < rows; ++i) b.labels.push_back(label(rng));
  return b;
}

// The dense rows `rows` of `b` (in that order) with their labels / targets.
inline Batch RowsOf(const Batch& b, const std::vector<int>& rows) {
  Batch s;
  s.dense = b.dense(rows, Eigen::all);
  for (int r : rows) {
    if (!b.labels.empty()) s.labels.push_back(b.labels[r]);
  }
  if (b.targets.size() > 0) s.targets = b.targets(rows);
  return s;
}

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_SIMPLE_SIMPLE_TEST_UTIL_H_
