// Multi-task rounds beside their roofs, in the
// round_benchmark executable (./bench/round_benchmark
// --benchmark_filter=Multitask; bench/round_roofline_table.py prints them).
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "bench/round_shapes.h"
#include "core/problem_registry.h"
#include "core/session.h"

namespace f2obo {
namespace {

using bench::GaussianBatch;
using bench::kRing;
using bench::kSmall;
using bench::Shape;

// ---------------------------------------------------------------------------
// Multi-task rounds at small shapes: mt_f2obo (K = 5,
// fixed alpha = beta = 0.1 as BM_Shape's) with kTasksPerStep = 4 of m = 16
// tasks a step, each task with its own 8 + 8 rows:
//   logistic_small:   multitask_logistic_hpo, d = 20, C = 3 (BM_Shape/small
//                     per task; max_temperature 1: every task untempered,
//                     /tempered: 4, every task its own temperature);
//   quadratic_small:  multitask_quadratic, d1 = 10, d2 = 20 (M_i, c_i, d_i).
// Roofs: logistic, 4 x BM_GemmRoof/small (each task's round makes the same
// 38 products); quadratic, BM_MultitaskQuadraticRoof: per task the
// products of M_i its round needs at the least (M_i x once, M_i^T v for
// grad_x g at y and at z), as Eigen GEMVs.
constexpr int kTasksPerStep = 4, kTaskCount = 16;

std::vector<StepData> MultitaskRing(bool quadratic) {
  std::mt19937_64 rng(quadratic ? 10 : 20);
  std::normal_distribution<double> n01;
  const Shape s = kSmall;
  const RowMatrix means =
      RowMatrix::NullaryExpr(s.classes, s.d, [&] { return 2.0 * n01(rng) / std::sqrt(s.d); });
  std::vector<StepData> ring;
  for (int k = 0; k < kRing; ++k) {
    StepData step;
    for (int q = 0; q < kTasksPerStep; ++q) {
      TaskData t;
      t.task = (k * kTasksPerStep + q) % kTaskCount;
      if (quadratic) {
        t.data.inner.M = Matrix::NullaryExpr(20, 10, [&] { return 0.3 * n01(rng); });
        t.data.inner.c = Vector::NullaryExpr(20, [&] { return n01(rng); });
        t.data.upper.d = Vector::NullaryExpr(20, [&] { return n01(rng); });
      } else {
        t.data.upper = GaussianBatch(s, means, rng);
        t.data.inner = GaussianBatch(s, means, rng);
      }
      step.tasks.push_back(std::move(t));
    }
    ring.push_back(std::move(step));
  }
  return ring;
}

void BM_Multitask(benchmark::State& state, bool quadratic, double max_temperature) {
  const std::vector<StepData> ring = MultitaskRing(quadratic);
  SessionConfig config;
  config.problem_class = ProblemClass::kMultitaskBilevel;
  config.family.name = quadratic ? "multitask_quadratic" : "multitask_logistic_hpo";
  config.family.tasks = kTaskCount;
  if (quadratic) {
    config.family.x_dim = 10;
    config.family.y_dim = 20;
    config.constraint = ConstraintSet::Ball(10.0);
  } else {
    config.family.features = kSmall.d;
    config.family.classes = kSmall.classes;
    config.family.mu0 = 1e-3;
    config.family.max_temperature = max_temperature;
    config.constraint = ConstraintSet::Box(0.0, 0.1);
  }
  config.algorithm = "mt_f2obo";
  config.options = DefaultAlgorithmOptions("mt_f2obo");
  config.options.inner_steps = 5;
  config.options.alpha = config.options.beta = 0.1;
  config.options.alpha_auto = config.options.beta_auto = false;
  config.seed = 1;
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  if (!session.ok()) {
    state.SkipWithError(session.status().ToString().c_str());
    return;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (const StepData& step : ring) (void)(*session)->Step(step);
  }
  size_t next = 0;
  for (auto _ : state) {
    absl::StatusOr<StepReport> r = (*session)->Step(ring[next]);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      break;
    }
    next = (next + 1) % ring.size();
  }
  state.counters["tasks/step"] = kTasksPerStep;
}
BENCHMARK_CAPTURE(BM_Multitask, logistic_small, false, 1.0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Multitask, logistic_small_tempered, false, 4.0)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Multitask, quadratic_small, true, 1.0)->Unit(benchmark::kMicrosecond);

void BM_MultitaskQuadraticRoof(benchmark::State& state) {
  const std::vector<StepData> ring = MultitaskRing(true);
  const Vector x = Vector::Constant(10, 0.1), y = Vector::Constant(20, 0.2);
  const Vector z = Vector::Constant(20, -0.1);
  Vector mx(20), gy(10), gz(10);
  size_t next = 0;
  for (auto _ : state) {
    for (const TaskData& t : ring[next].tasks) {
      const Matrix& m = t.data.inner.M;
      mx.noalias() = m * x;
      gy.noalias() = m.transpose() * (y - mx);
      gz.noalias() = m.transpose() * (z - mx);
      benchmark::DoNotOptimize(gy.data());
      benchmark::DoNotOptimize(gz.data());
    }
    next = (next + 1) % ring.size();
  }
}
BENCHMARK(BM_MultitaskQuadraticRoof)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace f2obo
