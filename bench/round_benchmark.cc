// Throughput of one round (Session::Step) of every algorithm on the
// logistic_hpo family at the paper's Sec. 6.2 shape (C = 10 classes,
// mu_0 = 1e-3, X = [0, 0.1]^d), 256 upper + 256 inner rows per step:
//   dense784:  d = 784 dense rows, synthetic "pixels" in [0, 1];
//   csr100k:   d = 100,000 CSR rows with 1000 non-zeros each (1% density).
// A ring of kRing distinct steps is generated up front, so the stream drifts
// and the batches are not all cache-resident; the session state advances
// with every benchmark iteration.
//
// Counters: items_per_second = rounds/s; bytes_per_second = batch bytes the
// rounds streamed (StepReport::rows_processed x bytes per row: d*8 dense,
// nnz*(8+4) CSR).  z_iters / y_iters: mean inner iterations per round.
//
// Also: the GradYGPair kernel alone (fixed vs per-row cost), and
// ComputeExactMetrics on the dense784 shape and on a small quadratic.
// Multi-task rounds at small shapes: multitask_round_benchmark.cc (the
// same executable; shapes and rings shared through round_shapes.h).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/round_shapes.h"
#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/bilevel/bilevel_state.h"
#include "core/problem_registry.h"
#include "core/session.h"

namespace f2obo {
namespace {

using bench::GaussianBatch;
using bench::kMedium;
using bench::kPaper;
using bench::kRing;
using bench::kSmall;
using bench::Shape;

constexpr int kRows = 256;  // rows per batch (upper and inner each)
constexpr int kClasses = 10;
constexpr int kDenseD = 784;
constexpr int kCsrD = 100000;
constexpr int kCsrNnz = 1000;  // non-zeros per CSR row (1% of d)

struct Workload {
  int d = 0;
  int64_t bytes_per_row = 0;
  std::vector<StepData> ring;
};

// Dense "pixels": per-class templates in [0.1, 0.9], shifted a little per
// ring step (drift), plus N(0, 0.15^2) noise, clamped to [0, 1].
Batch PixelBatch(const RowMatrix& templates, double shift, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> label(0, kClasses - 1);
  std::normal_distribution<double> noise(0.0, 0.15);
  Batch b;
  b.dense.resize(kRows, templates.cols());
  b.labels.resize(kRows);
  for (int i = 0; i < kRows; ++i) {
    b.labels[i] = label(rng);
    for (int j = 0; j < templates.cols(); ++j) {
      const double v = templates(b.labels[i], j) + shift + noise(rng);
      b.dense(i, j) = std::clamp(v, 0.0, 1.0);
    }
  }
  return b;
}

// CSR rows with exactly kCsrNnz distinct sorted columns; values in (0, 1],
// plus 0.5 on columns congruent to the label mod C (a learnable signal).
Batch SparseBatch(std::mt19937_64& rng) {
  std::uniform_int_distribution<int> label(0, kClasses - 1);
  std::uniform_int_distribution<int32_t> column(0, kCsrD - 1);
  std::uniform_real_distribution<double> value(0.0, 1.0);
  std::vector<int64_t> indptr(kRows + 1, 0);
  std::vector<int32_t> indices;
  std::vector<double> values;
  std::vector<int32_t> cols;
  Batch b;
  b.sparse_features = true;
  b.labels.resize(kRows);
  for (int i = 0; i < kRows; ++i) {
    b.labels[i] = label(rng);
    cols.clear();
    while (static_cast<int>(cols.size()) < kCsrNnz) {
      while (static_cast<int>(cols.size()) < kCsrNnz) cols.push_back(column(rng));
      std::sort(cols.begin(), cols.end());
      cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    }
    for (int32_t c : cols) {
      indices.push_back(c);
      values.push_back(1.0 - value(rng) + (c % kClasses == b.labels[i] ? 0.5 : 0.0));
    }
    indptr[i + 1] = static_cast<int64_t>(indices.size());
  }
  b.csr = *MakeCsr(kRows, kCsrD, indptr, indices, values);
  return b;
}

const Workload& GetWorkload(bool sparse) {
  static const Workload* const kDense = [] {
    auto* w = new Workload;
    w->d = kDenseD;
    w->bytes_per_row = int64_t{kDenseD} * 8;
    std::mt19937_64 rng(784);
    std::uniform_real_distribution<double> tmpl(0.1, 0.9);
    RowMatrix templates(kClasses, kDenseD);
    for (int c = 0; c < kClasses; ++c)
      for (int j = 0; j < kDenseD; ++j) templates(c, j) = tmpl(rng);
    for (int s = 0; s < kRing; ++s) {
      const double shift = 0.02 * s;
      w->ring.push_back(
          StepData{PixelBatch(templates, shift, rng), PixelBatch(templates, shift, rng)});
    }
    return w;
  }();
  static const Workload* const kSparse = [] {
    auto* w = new Workload;
    w->d = kCsrD;
    w->bytes_per_row = int64_t{kCsrNnz} * (8 + 4);
    std::mt19937_64 rng(100000);
    for (int s = 0; s < kRing; ++s) {
      w->ring.push_back(StepData{SparseBatch(rng), SparseBatch(rng)});
    }
    return w;
  }();
  return sparse ? *kSparse : *kDense;
}

// Registry defaults with K = 5 (f2obo_sl is single-loop, K = 1), AF2OBO
// capped at 50 iterations per loop.  SF2OBO's default B_t = ceil(t^(2/3))
// would make the cost depend on t; a fixed mini-batch keeps it stationary.
SessionConfig RoundConfig(const std::string& algorithm, int d, int sf2obo_batch) {
  SessionConfig c;
  c.family.name = "logistic_hpo";
  c.family.features = d;
  c.family.classes = kClasses;
  c.family.mu0 = 1e-3;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  if (algorithm != "f2obo_sl") c.options.inner_steps = 5;
  if (algorithm == "af2obo") c.options.max_inner_iterations = 50;
  if (algorithm == "sf2obo") {
    c.options.batch_scale = sf2obo_batch;
    c.options.batch_growth = 0.0;
    c.options.hyper_batch_growth = 0.0;
  }
  c.constraint = ConstraintSet::Box(0.0, 0.1);
  c.seed = 1;
  return c;
}

void BM_Round(benchmark::State& state, const std::string& algorithm, bool sparse,
              int sf2obo_batch) {
  const Workload& w = GetWorkload(sparse);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(RoundConfig(algorithm, w.d, sf2obo_batch));
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  // Warm-up: one pass over the ring (first-round buffer growth, caches).
  for (const StepData& step : w.ring) {
    if (absl::StatusOr<StepReport> r = (*session)->Step(step); !r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
  }
  int64_t rows = 0, kz = 0, ky = 0, caps = 0;
  size_t next = 0;
  for (auto _ : state) {
    absl::StatusOr<StepReport> r = (*session)->Step(w.ring[next]);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      break;
    }
    next = (next + 1) % w.ring.size();
    rows += r->rows_processed;
    const BilevelReport& b = std::get<BilevelReport>(r->detail);
    kz += b.z_iterations;
    ky += b.y_iterations;
    caps += r->cap_hit ? 1 : 0;
  }
  using benchmark::Counter;
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(rows * w.bytes_per_row);
  state.counters["rows/round"] = Counter(static_cast<double>(rows), Counter::kAvgIterations);
  state.counters["z_iters"] = Counter(static_cast<double>(kz), Counter::kAvgIterations);
  state.counters["y_iters"] = Counter(static_cast<double>(ky), Counter::kAvgIterations);
  if (algorithm == "af2obo") {
    state.counters["cap_hit_frac"] = Counter(static_cast<double>(caps), Counter::kAvgIterations);
  }
}

#define F2OBO_ROUND(label, algorithm, sparse, batch)                        \
  BENCHMARK_CAPTURE(BM_Round, label, std::string(algorithm), sparse, batch) \
      ->Unit(benchmark::kMillisecond)

F2OBO_ROUND(f2obo_dense784, "f2obo", false, 0);
F2OBO_ROUND(f2obo_sl_dense784, "f2obo_sl", false, 0);
F2OBO_ROUND(af2obo_dense784, "af2obo", false, 0);
F2OBO_ROUND(sf2obo_b64_dense784, "sf2obo", false, 64);
F2OBO_ROUND(sf2obo_b256_dense784, "sf2obo", false, 256);
F2OBO_ROUND(f2obo_csr100k, "f2obo", true, 0);
F2OBO_ROUND(f2obo_sl_csr100k, "f2obo_sl", true, 0);
F2OBO_ROUND(af2obo_csr100k, "af2obo", true, 0);
F2OBO_ROUND(sf2obo_b64_csr100k, "sf2obo", true, 64);
F2OBO_ROUND(sf2obo_b256_csr100k, "sf2obo", true, 256);

// The inner loop's kernel alone: logistic_hpo GradYGPair (grad_y g at z and
// y in one pass) on the first `rows` rows of an inner batch.  rows = 1 is
// the O(d*C) part (zeroing two gradients, the regularizer); the difference
// to rows = 256 is the per-row part (logits and back-projection).
void BM_GradYGPair(benchmark::State& state) {
  const Workload& w = GetWorkload(state.range(0) != 0);
  const int rows = static_cast<int>(state.range(1));
  FamilyConfig fc = RoundConfig("f2obo", w.d, 0).family;
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(fc);
  const Vector x = Vector::Constant(family->x_dim(), 0.05);
  const Vector y = Vector::Constant(family->y_dim(), 0.01), z = -y;
  Vector gz(family->y_dim()), gy(family->y_dim());
  const Batch& inner = w.ring[0].inner;
  const BatchView view{&inner, RowSet{nullptr, rows}};
  for (auto _ : state) {
    family->GradYGPair(x, z, y, view, &gz, &gy);
    benchmark::DoNotOptimize(gz.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * rows * w.bytes_per_row);
}
BENCHMARK(BM_GradYGPair)
    ->ArgNames({"csr", "rows"})
    ->Args({0, 1})
    ->Args({0, kRows})
    ->Args({1, 1})
    ->Args({1, kRows})
    ->Unit(benchmark::kMillisecond);

// Exact metrics of one step, with the previous step's batches (so variation
// and drift are computed too), at the state F2OBO reached after a ring pass.
void RunExactMetrics(benchmark::State& state, const SessionConfig& config,
                     const std::vector<StepData>& ring) {
  std::unique_ptr<Session> session = *Session::Create(config);
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(config.family);
  MetricsInput in{};
  for (const StepData& step : ring) {
    in = MetricsInput{session->state().t, session->state().x, BilevelView(session->state()).y,
                      Vector(), config.options.gamma};
    absl::StatusOr<StepReport> r = session->Step(step);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    in.h = std::get<BilevelReport>(r->detail).hypergradient;
  }
  const StepData& current = ring.back();
  const StepData& previous = ring[ring.size() - 2];
  int64_t newton = 0, cg = 0;
  for (auto _ : state) {
    absl::StatusOr<ExactMetrics> m =
        ComputeExactMetrics(*family, config.constraint, in, current, &previous);
    if (!m.ok()) {
      state.SkipWithError(m.status().ToString().c_str());
      break;
    }
    newton += m->newton_iterations;
    cg += m->cg_iterations;
  }
  using benchmark::Counter;
  state.SetItemsProcessed(state.iterations());
  state.counters["newton_iters"] = Counter(static_cast<double>(newton), Counter::kAvgIterations);
  state.counters["cg_iters"] = Counter(static_cast<double>(cg), Counter::kAvgIterations);
}

void BM_ExactMetrics_LogisticDense784(benchmark::State& state) {
  const Workload& w = GetWorkload(false);
  RunExactMetrics(state, RoundConfig("f2obo", w.d, 0), w.ring);
}
// Expensive (Newton-CG on 7850 unknowns, three inner solves): few iterations.
BENCHMARK(BM_ExactMetrics_LogisticDense784)->Unit(benchmark::kMillisecond)->Iterations(3);

// Sanity line: quadratic with d1 = 10, d2 = 20 (closed-form inner problem).
void BM_ExactMetrics_QuadraticSmall(benchmark::State& state) {
  constexpr int kD1 = 10, kD2 = 20;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01;
  std::vector<StepData> ring(kRing);
  for (StepData& s : ring) {
    s.inner.M = Matrix::NullaryExpr(kD2, kD1, [&] { return n01(rng) / 4.0; });
    s.inner.c = Vector::NullaryExpr(kD2, [&] { return n01(rng); });
    s.upper.d = Vector::NullaryExpr(kD2, [&] { return n01(rng); });
  }
  SessionConfig config;
  config.family.name = "quadratic";
  config.family.x_dim = kD1;
  config.family.y_dim = kD2;
  config.algorithm = "f2obo";
  config.options = DefaultAlgorithmOptions("f2obo");
  config.constraint = ConstraintSet::Ball(1.0);
  RunExactMetrics(state, config, ring);
}
BENCHMARK(BM_ExactMetrics_QuadraticSmall)->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------
// Side by side with the machine's roof and with PyTorch.
//
// BM_Shape: one F2OBO round (K = 5, logistic_hpo, mu_0 = 1e-3, X = [0, 0.1]^d)
// at a given d, C and rows per batch, with fixed or auto step sizes:
//   small:  d = 20,  C = 3,  8 + 8 rows   (bench/torch_round.py's "small")
//   medium: d = 100, C = 10, 32 + 32 rows (its "medium")
//   paper:  d = 784, C = 10, 256 + 256 rows (the dense784 workload's shape)
// BM_GemmRoof: the dense products such a round needs, as plain Eigen GEMMs
// of the same shapes in the same build: 2 + 6K + 6 = 38 products of
// (rows x d) by (d x C) size -- the prequential F and accuracy (2), per inner
// iteration grad_y g at z and y (forward and back-projection of a d x 2C
// pair: 4) and grad_y f (2), the hypergradient's f and g pair (6).  Both
// report GFLOP/s on that nominal count (76 rows d C flops per round), so
// round GFLOP/s / roof GFLOP/s is the fraction of the roof the round reaches.

double NominalRoundFlops(const Shape& s, int k) {
  return 2.0 * (2 + 6 * k + 6) * s.rows * static_cast<double>(s.d) * s.classes;
}

std::vector<StepData> ShapeRing(const Shape& s) {
  if (s.d == kDenseD && s.rows == kRows) return GetWorkload(false).ring;
  std::mt19937_64 rng(s.d * 1000 + s.rows);
  std::normal_distribution<double> n01;
  const RowMatrix means =
      RowMatrix::NullaryExpr(s.classes, s.d, [&] { return 2.0 * n01(rng) / std::sqrt(s.d); });
  std::vector<StepData> ring;
  for (int k = 0; k < kRing; ++k) {
    ring.push_back(StepData{GaussianBatch(s, means, rng), GaussianBatch(s, means, rng)});
  }
  return ring;
}

void BM_Shape(benchmark::State& state, Shape shape, bool auto_steps) {
  const std::vector<StepData> ring = ShapeRing(shape);
  SessionConfig config = RoundConfig("f2obo", shape.d, 0);
  config.family.classes = shape.classes;
  // Fixed: bench/torch_round.py's alpha = 0.1, beta_t = 0.1 / lambda_t (the
  // registry's default alpha = beta = 0 means automatic, so "fixed" must set
  // them).
  config.options.alpha = auto_steps ? 0.0 : 0.1;
  config.options.beta = auto_steps ? 0.0 : 0.1;
  config.options.alpha_auto = config.options.beta_auto = auto_steps;
  std::unique_ptr<Session> session = *Session::Create(config);
  for (const StepData& step : ring) (void)session->Step(step);
  size_t next = 0;
  for (auto _ : state) {
    absl::StatusOr<StepReport> r = session->Step(ring[next]);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      break;
    }
    next = (next + 1) % ring.size();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      1e-9 * NominalRoundFlops(shape, 5) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_Shape, small_fixed, kSmall, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Shape, small_auto, kSmall, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Shape, medium_fixed, kMedium, false)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Shape, medium_auto, kMedium, true)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Shape, paper_fixed, kPaper, false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Shape, paper_auto, kPaper, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Shape, paper64_fixed, (Shape{784, 10, 64}), false)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Shape, paper64_auto, (Shape{784, 10, 64}), true)
    ->Unit(benchmark::kMillisecond);

// The 38 products of one f2obo round with K = 5 (the roofs below time them
// for dense and for CSR rows): prequential f and accuracy, then per inner
// step Z = A W and G = A^T Z on both batches, then the final pair.
template <typename Rows>
void RoundProducts(const Rows& a_up, const Rows& a_in, const RowMatrix& w1, const RowMatrix& w2,
                   RowMatrix* z1, RowMatrix* z2, RowMatrix* g1, RowMatrix* g2) {
  constexpr int kK = 5;
  z1->noalias() = a_up * w1;  // prequential f
  z1->noalias() = a_up * w1;  // prequential accuracy
  for (int k = 0; k < kK; ++k) {
    z2->noalias() = a_in * w2;
    g2->noalias() = a_in.transpose() * *z2;
    z1->noalias() = a_up * w1;
    g1->noalias() = a_up.transpose() * *z1;
  }
  z1->noalias() = a_up * w1;
  g1->noalias() = a_up.transpose() * *z1;
  z2->noalias() = a_in * w2;
  g2->noalias() = a_in.transpose() * *z2;
}

void BM_GemmRoof(benchmark::State& state, Shape s) {
  constexpr int kK = 5;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01;
  auto random = [&](int r, int c) {
    return RowMatrix::NullaryExpr(r, c, [&] { return n01(rng); });
  };
  const RowMatrix a_up = random(s.rows, s.d), a_in = random(s.rows, s.d);
  const RowMatrix w1 = random(s.d, s.classes), w2 = random(s.d, 2 * s.classes);
  RowMatrix z1(s.rows, s.classes), z2(s.rows, 2 * s.classes);
  RowMatrix g1(s.d, s.classes), g2(s.d, 2 * s.classes);
  for (auto _ : state) {
    RoundProducts(a_up, a_in, w1, w2, &z1, &z2, &g1, &g2);
    benchmark::DoNotOptimize(g1.data());
    benchmark::DoNotOptimize(g2.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      1e-9 * NominalRoundFlops(s, kK) * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_GemmRoof, small, kSmall)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemmRoof, medium, kMedium)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_GemmRoof, paper, kPaper)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GemmRoof, paper64, (Shape{784, 10, 64}))->Unit(benchmark::kMillisecond);

// The CSR round's roof: the same 38 products as BM_GemmRoof for
// f2obo_csr100k's shapes (256 rows of d = 100,000 with 1,000 non-zeros, C =
// 10), as Eigen sparse-times-dense products on the ring's first step: Z =
// A W (n x C or n x 2C) and G = A^T R (d x C or d x 2C, a dense d-sized
// result each time, as the round's gradients).  Same nominal count, so
// BM_Round/f2obo_csr100k's time over this one is the round's share of it.
void BM_SpmmRoof(benchmark::State& state) {
  const Workload& w = GetWorkload(true);
  const CsrMatrix& a_up = w.ring[0].upper.csr;
  const CsrMatrix& a_in = w.ring[0].inner.csr;
  std::mt19937_64 rng(6);
  std::normal_distribution<double> n01;
  auto random = [&](int r, int c) {
    return RowMatrix::NullaryExpr(r, c, [&] { return 0.01 * n01(rng); });
  };
  const RowMatrix w1 = random(kCsrD, kClasses), w2 = random(kCsrD, 2 * kClasses);
  RowMatrix z1(kRows, kClasses), z2(kRows, 2 * kClasses);
  RowMatrix g1(kCsrD, kClasses), g2(kCsrD, 2 * kClasses);
  for (auto _ : state) {
    RoundProducts(a_up, a_in, w1, w2, &z1, &z2, &g1, &g2);
    benchmark::DoNotOptimize(g1.data());
    benchmark::DoNotOptimize(g2.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpmmRoof)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace f2obo
