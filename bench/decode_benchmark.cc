// What the input-bound check (every number of every batch field
// finite with |v| <= 1e150, core/batch.h) adds to decoding a step: the
// check alone, all of ToBatch (shape checks, the check, the copy into core
// types) and a plain copy of the same values, on the paper's Sec. 6.2
// batch shape (256 dense rows of 784 features, labels) -- side by side in
// one run, so that the ratios hold whatever the machine's load.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/batch.h"
#include "f2obo/v1/convert.h"

namespace f2obo {
namespace {

constexpr int kRows = 256;
constexpr int kCols = 784;

const v1::Batch& WireBatch() {
  static const v1::Batch batch = [] {
    std::mt19937_64 rng(1);
    std::uniform_real_distribution<double> pixel(0.0, 1.0);
    v1::Batch b;
    v1::DenseMatrix* d = b.mutable_dense();
    d->set_rows(kRows);
    d->set_cols(kCols);
    for (int i = 0; i < kRows * kCols; ++i) d->add_values(pixel(rng));
    for (int i = 0; i < kRows; ++i) b.add_labels(i % 10);
    return b;
  }();
  return batch;
}

void SetBytes(benchmark::State& state) {
  state.SetBytesProcessed(state.iterations() * int64_t{kRows} * kCols * 8);
}

void BM_CheckInputNumbers(benchmark::State& state) {
  const v1::DenseMatrix& d = WireBatch().dense();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        CheckInputNumbers(d.values().data(), d.values_size(), "upper.dense.values", kCols));
  }
  SetBytes(state);
}
BENCHMARK(BM_CheckInputNumbers);

void BM_ToBatch(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ToBatch(WireBatch(), "upper"));
  SetBytes(state);
}
BENCHMARK(BM_ToBatch);

void BM_CopyValues(benchmark::State& state) {
  const v1::DenseMatrix& d = WireBatch().dense();
  std::vector<double> out(d.values_size());
  for (auto _ : state) {
    std::memcpy(out.data(), d.values().data(), out.size() * sizeof(double));
    benchmark::ClobberMemory();
  }
  SetBytes(state);
}
BENCHMARK(BM_CopyValues);

}  // namespace
}  // namespace f2obo
