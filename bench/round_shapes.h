// What bench/round_benchmark's files share: the small-shape round's
// shapes (BM_Shape's, round_benchmark.cc's comment says what each is), the
// ring of distinct steps cycled through, and its Gaussian rows.
#ifndef F2OBO_BENCH_ROUND_SHAPES_H_
#define F2OBO_BENCH_ROUND_SHAPES_H_

#include <random>

#include "core/batch.h"
#include "core/types.h"

namespace f2obo::bench {

inline constexpr int kRing = 8;  // distinct steps cycled through

struct Shape {
  int d, classes, rows;
};
inline constexpr Shape kSmall{20, 3, 8}, kMedium{100, 10, 32}, kPaper{784, 10, 256};

// Rows ~ N(mu_label, I) with class means of norm ~2, as ClassificationBatch.
inline Batch GaussianBatch(const Shape& s, const RowMatrix& means, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> label(0, s.classes - 1);
  std::normal_distribution<double> n01;
  Batch b;
  b.dense.resize(s.rows, s.d);
  b.labels.resize(s.rows);
  for (int i = 0; i < s.rows; ++i) {
    b.labels[i] = label(rng);
    for (int j = 0; j < s.d; ++j) b.dense(i, j) = means(b.labels[i], j) + n01(rng);
  }
  return b;
}

}  // namespace f2obo::bench

#endif  // F2OBO_BENCH_ROUND_SHAPES_H_
