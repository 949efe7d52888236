// One step (Session::Step) of every simple bilevel algorithm on the
// least_squares family over an l1 ball (the IR-SCG paper's over-
// parameterized regression), 64 upper + 64 inner rows per step:
//   dense1k:  d = 1,000 dense rows;
//   csr100k:  d = 100,000 CSR rows with 1,000 non-zeros each (1%).
// Side by side, in the same run, the reference every first-order round must
// pay at least once: one gradient pass, grad f and grad g on the step's rows
// (SimpleFamily::F and G with gradients).  A step's time over that pass is
// the ratio recorded in bench/RESULTS.md; IR-SCG's STORM estimators
// evaluate both gradients at x_t and x_{t-1}, so ~2 passes is its floor.
//
// Steady state: the windowed algorithms (ir_fscg, agm_bio) are measured
// with full windows of W rows of each kind (/W100, /W1000; the session is
// stepped ceil(W / 64) times before the timing starts), and ir_fscg over a
// whole number of its SPIDER periods q = floor(sqrt(W)) (a full pass over
// the window every q steps, S = q sampled rows between).  ir_scg keeps no
// window; /after1000 times it after 1,000 steps instead of 0, to show that
// its step does not grow with the length of the stream.
//
// RoundGradients/<algorithm>/<shape>/W<W> (ir_fscg, agm_bio): the gradient
// work of the same rounds, side by side (the reference for the windowed
// steps): the family calls a round makes, replayed alone on a
// window of the same rows (a RowWindow filled from the same ring, as the
// session's), with no session, state or window maintenance around them:
//  * every algorithm: the prequential f and g at the decision on the
//    step's rows (values; Problem::Round) and g at x_t on the step's inner
//    rows (the report's inner_loss_before);
//  * ir_fscg: at k mod q = 0 grad F and grad G over the window, otherwise
//    grad f and grad g at x_k and at x_{k-1} on S rows drawn from it, over
//    the same steps k as SimpleStep times;
//  * agm_bio: L_f and L_g by power iteration over the windows, grad g at
//    v, g at w, grad g at y (the cut) and grad f at y.
// SimpleStep over RoundGradients is what the session adds to the round's
// gradient work (the goal: <= 1.3 at W = 4,096, d = 1,000).
//
// Counters: items_per_second = steps/s; oracle_share = the fraction of the
// step spent in the LMO or projections (SimpleReport::oracle_seconds over
// round_seconds); window_rows = rows of each kind in the window;
// full_pass_us / other_us (ir_fscg) = mean round time of the steps with a
// full pass over the window and of the others.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/constraint.h"
#include "core/problem_registry.h"
#include "core/rng.h"
#include "core/session.h"
#include "core/simple/row_window.h"
#include "core/simple/simple_registries.h"

namespace f2obo {
namespace {

constexpr int kRows = 64;
constexpr int kRing = 8;
constexpr int kDenseD = 1000;
constexpr int kCsrD = 100000;
constexpr int kCsrNnz = 1000;

Batch DenseRows(int d, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  Batch b;
  b.dense.resize(kRows, d);
  b.targets.resize(kRows);
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < d; ++j) b.dense(i, j) = n(rng);
    b.targets[i] = n(rng);
  }
  return b;
}

Batch CsrRows(int d, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_int_distribution<int> col(0, d / kCsrNnz - 1);
  Batch b;
  b.sparse_features = true;
  b.csr.resize(kRows, d);
  b.csr.resizeNonZeros(static_cast<Eigen::Index>(kRows) * kCsrNnz);
  b.targets.resize(kRows);
  int at = 0;
  for (int i = 0; i < kRows; ++i) {
    b.csr.outerIndexPtr()[i] = at;
    // One non-zero per stride of d / nnz columns: strictly increasing.
    for (int k = 0; k < kCsrNnz; ++k, ++at) {
      b.csr.innerIndexPtr()[at] = k * (d / kCsrNnz) + col(rng);
      b.csr.valuePtr()[at] = n(rng);
    }
    b.targets[i] = n(rng);
  }
  b.csr.outerIndexPtr()[kRows] = at;
  return b;
}

std::vector<StepData> Ring(bool sparse) {
  std::mt19937_64 rng(42);
  std::vector<StepData> ring;
  for (int k = 0; k < kRing; ++k) {
    ring.push_back(sparse ? StepData{CsrRows(kCsrD, rng), CsrRows(kCsrD, rng)}
                          : StepData{DenseRows(kDenseD, rng), DenseRows(kDenseD, rng)});
  }
  return ring;
}

const std::vector<StepData>& Workload(bool sparse) {
  static const auto* dense = new std::vector<StepData>(Ring(false));
  static const auto* csr = new std::vector<StepData>(Ring(true));
  return sparse ? *csr : *dense;
}

SessionConfig Config(const std::string& algorithm, bool sparse, int window) {
  SessionConfig c;
  c.problem_class = ProblemClass::kSimpleBilevel;
  c.family.name = "least_squares";
  c.family.features = sparse ? kCsrD : kDenseD;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  if (window > 0) c.options.window_rows = window;
  c.constraint = ConstraintSet::L1Ball(10.0);
  c.seed = 1;
  return c;
}

// `window` > 0: window_rows of a windowed algorithm; `warmup`: steps applied
// before the timing (at least enough to fill the window).
void BM_SimpleStep(benchmark::State& state, const std::string& algorithm, bool sparse, int window,
                   int warmup) {
  const std::vector<StepData>& ring = Workload(sparse);
  auto session = Session::Create(Config(algorithm, sparse, window));
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  size_t k = 0;
  for (int i = 0; i < warmup; ++i) {
    if (absl::StatusOr<StepReport> r = (*session)->Step(ring[k++ % ring.size()]); !r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
  }
  double oracle = 0.0, total = 0.0, full = 0.0, other = 0.0;
  int64_t fulls = 0, others = 0;
  int rows = 0;
  for (auto _ : state) {
    absl::StatusOr<StepReport> r = (*session)->Step(ring[k++ % ring.size()]);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    const SimpleReport& s = std::get<SimpleReport>(r->detail);
    oracle += s.oracle_seconds;
    total += r->round_seconds;
    (s.full_pass ? full : other) += r->round_seconds;
    ++(s.full_pass ? fulls : others);
    rows = s.window_inner_rows;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["oracle_share"] = total > 0 ? oracle / total : 0.0;
  state.counters["window_rows"] = rows;
  if (algorithm == "ir_fscg") {
    state.counters["full_pass_us"] = fulls > 0 ? 1e6 * full / fulls : 0.0;
    state.counters["other_us"] = others > 0 ? 1e6 * other / others : 0.0;
  }
}

// AGM-BiO's projection alone: onto the l1 ball of radius 10 cut by
// {<a, z> <= b} (ConstraintSet::ProjectOntoCut), d = 1,000 and 100,000, a
// and x Gaussian, b halfway between min_Z <a, z> and <a, P_Z(x)> (the cut
// binds).  /inactive: b above <a, P_Z(x)>, the plain projection.
void BM_CutProjection(benchmark::State& state, int d, bool active) {
  std::mt19937_64 rng(d);
  std::normal_distribution<double> n(0.0, 1.0);
  const Vector a = Vector::NullaryExpr(d, [&] { return n(rng); });
  const Vector x = Vector::NullaryExpr(d, [&] { return 0.1 * n(rng); });
  const ConstraintSet set = ConstraintSet::L1Ball(10.0);
  Vector plain = x;
  set.Project(&plain);
  const double m = set.MinLinear(a), top = a.dot(plain);
  const double b = active ? 0.5 * (m + top) : top + 1.0;
  Vector z(d);
  for (auto _ : state) {
    z = x;
    if (absl::Status s = set.ProjectOntoCut(a, b, &z); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(z.data());
  }
  state.SetItemsProcessed(state.iterations());
}

// The gradient work of a windowed round (see the top of the file).
void BM_RoundGradients(benchmark::State& state, const std::string& algorithm, bool sparse,
                       int window, int warmup) {
  const std::vector<StepData>& ring = Workload(sparse);
  FamilyConfig fc;
  fc.name = "least_squares";
  fc.features = sparse ? kCsrD : kDenseD;
  std::unique_ptr<SimpleFamily> family = *CreateSimpleFamily(fc);
  RowWindow upper_rows(window, fc.features), inner_rows(window, fc.features);
  for (int i = 0; i < warmup; ++i) {
    upper_rows.Append(ring[static_cast<size_t>(i) % ring.size()].upper);
    inner_rows.Append(ring[static_cast<size_t>(i) % ring.size()].inner);
  }
  const BatchView upper = upper_rows.view(), inner = inner_rows.view();
  const int q = std::max(1, static_cast<int>(std::floor(std::sqrt(static_cast<double>(window)))));
  const Vector x = Vector::Constant(fc.features, 1e-3), prev = Vector::Constant(fc.features, 2e-3);
  const Vector decision = Vector::Constant(fc.features, 5e-4);
  Vector g1, g2;
  std::vector<int> idx(static_cast<size_t>(q));
  Rng rng(1);
  const auto draw = [&](const BatchView& all) {
    for (int& i : idx) {
      i = all.rows.row(static_cast<int>(rng.UniformBelow(static_cast<uint64_t>(all.rows.n))));
    }
    return BatchView{all.batch, RowSet{idx.data(), q}};
  };
  int64_t k = warmup;  // the step index SimpleStep's first timed round has (t - 1)
  for (auto _ : state) {
    const StepData& d = ring[static_cast<size_t>(k) % ring.size()];
    benchmark::DoNotOptimize(family->F(decision, BatchView::All(d.upper), nullptr));
    benchmark::DoNotOptimize(family->G(decision, BatchView::All(d.inner), nullptr));
    benchmark::DoNotOptimize(family->G(x, BatchView::All(d.inner), nullptr));
    if (algorithm == "ir_fscg") {
      if (k % q == 0) {
        family->F(x, upper, &g1);
        family->G(x, inner, &g2);
      } else {
        const BatchView su = draw(upper);
        family->F(x, su, &g1);
        family->F(prev, su, &g2);
        const BatchView si = draw(inner);
        family->G(x, si, &g1);
        family->G(prev, si, &g2);
      }
    } else {
      benchmark::DoNotOptimize(family->SmoothnessF(upper));
      benchmark::DoNotOptimize(family->SmoothnessG(inner));
      family->G(prev, inner, &g1);
      benchmark::DoNotOptimize(family->G(x, inner, nullptr));
      family->G(decision, inner, &g2);
      family->F(decision, upper, &g1);
    }
    benchmark::DoNotOptimize(g1.data());
    benchmark::DoNotOptimize(g2.data());
    ++k;
  }
  state.SetItemsProcessed(state.iterations());
}

// The reference: grad f and grad g once on the step's rows.
void BM_GradientPass(benchmark::State& state, bool sparse) {
  const std::vector<StepData>& ring = Workload(sparse);
  FamilyConfig fc;
  fc.name = "least_squares";
  fc.features = sparse ? kCsrD : kDenseD;
  std::unique_ptr<SimpleFamily> family = *CreateSimpleFamily(fc);
  Vector x = Vector::Constant(fc.features, 1e-3), gf, gg;
  size_t k = 0;
  for (auto _ : state) {
    const StepData& d = ring[k++ % ring.size()];
    benchmark::DoNotOptimize(family->F(x, BatchView::All(d.upper), &gf));
    benchmark::DoNotOptimize(family->G(x, BatchView::All(d.inner), &gg));
  }
  state.SetItemsProcessed(state.iterations());
}

// Small shape: least_squares with d = 20 dense features,
// 8 + 8 rows a step (the bilevel BM_Shape/small's rows and features), each
// algorithm at its defaults (windowed ones at W = 100), against two
// references from the same ring: GradientPass/small (grad f and grad g
// through the family, as GradientPass above) and GemvRoof/small, the same
// four products as Eigen GEMVs (A_u x, A_u^T r_u, A_i x, A_i^T r_i) with
// nothing around them.
constexpr int kSmallD = 20, kSmallRows = 8;

const std::vector<StepData>& SmallWorkload() {
  static const auto* ring = [] {
    std::mt19937_64 rng(20);
    std::normal_distribution<double> n(0.0, 1.0);
    auto rows = [&] {
      Batch b;
      b.dense = RowMatrix::NullaryExpr(kSmallRows, kSmallD, [&] { return n(rng); });
      b.targets = Vector::NullaryExpr(kSmallRows, [&] { return n(rng); });
      return b;
    };
    auto* r = new std::vector<StepData>;
    for (int k = 0; k < kRing; ++k) r->push_back(StepData{rows(), rows()});
    return r;
  }();
  return *ring;
}

void BM_SmallStep(benchmark::State& state, const std::string& algorithm, int window) {
  const std::vector<StepData>& ring = SmallWorkload();
  SessionConfig c;
  c.problem_class = ProblemClass::kSimpleBilevel;
  c.family.name = "least_squares";
  c.family.features = kSmallD;
  c.algorithm = algorithm;
  c.options = DefaultAlgorithmOptions(algorithm);
  if (window > 0) c.options.window_rows = window;
  c.constraint = ConstraintSet::L1Ball(10.0);
  c.seed = 1;
  auto session = Session::Create(c);
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  size_t k = 0;
  const int warmup = std::max(2 * kRing, window > 0 ? window / kSmallRows + 1 : 0);
  for (int i = 0; i < warmup; ++i) (void)(*session)->Step(ring[k++ % ring.size()]);
  for (auto _ : state) {
    absl::StatusOr<StepReport> r = (*session)->Step(ring[k++ % ring.size()]);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
  }
}

void BM_SmallGradientPass(benchmark::State& state) {
  const std::vector<StepData>& ring = SmallWorkload();
  FamilyConfig fc;
  fc.name = "least_squares";
  fc.features = kSmallD;
  std::unique_ptr<SimpleFamily> family = *CreateSimpleFamily(fc);
  Vector x = Vector::Constant(kSmallD, 1e-2), gf, gg;
  size_t k = 0;
  for (auto _ : state) {
    const StepData& d = ring[k++ % ring.size()];
    benchmark::DoNotOptimize(family->F(x, BatchView::All(d.upper), &gf));
    benchmark::DoNotOptimize(family->G(x, BatchView::All(d.inner), &gg));
  }
}

void BM_SmallGemvRoof(benchmark::State& state) {
  const std::vector<StepData>& ring = SmallWorkload();
  const Vector x = Vector::Constant(kSmallD, 1e-2);
  Vector r(kSmallRows), gf(kSmallD), gg(kSmallD);
  size_t k = 0;
  for (auto _ : state) {
    const StepData& d = ring[k++ % ring.size()];
    r.noalias() = d.upper.dense * x;
    r -= d.upper.targets;
    gf.noalias() = d.upper.dense.transpose() * r;
    r.noalias() = d.inner.dense * x;
    r -= d.inner.targets;
    gg.noalias() = d.inner.dense.transpose() * r;
    benchmark::DoNotOptimize(gf.data());
    benchmark::DoNotOptimize(gg.data());
  }
}

void Register() {
  for (int d : {1000, 100000}) {
    for (bool active : {true, false}) {
      benchmark::RegisterBenchmark(
          ("CutProjection/l1/d" + std::to_string(d) + (active ? "" : "/inactive")).c_str(),
          BM_CutProjection, d, active)
          ->Unit(benchmark::kMillisecond);
    }
  }
  benchmark::RegisterBenchmark("GradientPass/small", BM_SmallGradientPass)
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("GemvRoof/small", BM_SmallGemvRoof)->Unit(benchmark::kMicrosecond);
  for (const std::string& a : AlgorithmNames(ProblemClass::kSimpleBilevel)) {
    const int window = a == "ir_scg" ? 0 : 100;
    benchmark::RegisterBenchmark(("SimpleStep/" + a + "/small").c_str(), BM_SmallStep, a, window)
        ->Unit(benchmark::kMicrosecond);
  }
  for (bool sparse : {false, true}) {
    const std::string shape = sparse ? "csr100k" : "dense1k";
    benchmark::RegisterBenchmark(("GradientPass/" + shape).c_str(), BM_GradientPass, sparse)
        ->Unit(benchmark::kMicrosecond);
    for (const std::string& a : AlgorithmNames(ProblemClass::kSimpleBilevel)) {
      const std::string name = "SimpleStep/" + a + "/" + shape;
      if (a == "ir_scg") {
        for (int warmup : {0, 1000}) {
          benchmark::RegisterBenchmark((name + (warmup > 0 ? "/after1000" : "")).c_str(),
                                       BM_SimpleStep, a, sparse, 0, warmup)
              ->Unit(benchmark::kMicrosecond);
        }
        continue;
      }
      for (int w : {100, 1000, 4096}) {
        const int fill = (w + kRows - 1) / kRows;
        const std::string suffix = "/" + a + "/" + shape + "/W" + std::to_string(w);
        auto* b = benchmark::RegisterBenchmark(("SimpleStep" + suffix).c_str(), BM_SimpleStep, a,
                                               sparse, w, fill)
                      ->Unit(benchmark::kMicrosecond);
        auto* g = benchmark::RegisterBenchmark(("RoundGradients" + suffix).c_str(),
                                               BM_RoundGradients, a, sparse, w, fill)
                      ->Unit(benchmark::kMicrosecond);
        // Two SPIDER periods: the mean then weighs full passes as the
        // algorithm does.  (--benchmark_min_time does not apply to these.)
        if (a == "ir_fscg") {
          const int periods = 2 * static_cast<int>(std::floor(std::sqrt(static_cast<double>(w))));
          b->Iterations(periods);
          g->Iterations(periods);
        }
      }
    }
  }
}

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  f2obo::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
