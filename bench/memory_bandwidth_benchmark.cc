// STREAM-like memory bandwidth (McCalpin's STREAM kernels, single thread):
//   Copy:   c[i] = a[i]            counts 16 bytes per element (1 read, 1 write)
//   Triad:  a[i] = b[i] + s * c[i] counts 24 bytes per element (2 reads, 1 write)
// As in STREAM, write-allocate traffic is not counted, so the figures are
// what a kernel "sees", comparable with the round benchmark's batch bytes/s.
// The argument is the size of EACH array in MiB: 1 MiB fits the 2 MiB
// per-core L2; 8 MiB is one csr100k parameter vector y (d*C + C doubles);
// 64 MiB is the classic STREAM size; 512 MiB is the safe DRAM figure (the VM
// reports a large shared L3, so 64 MiB arrays may partly hit it).  Arrays
// are first-touched before timing.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

std::size_t Elements(const benchmark::State& state) {
  return static_cast<std::size_t>(state.range(0)) * (std::size_t{1} << 20) / sizeof(double);
}

void BM_StreamCopy(benchmark::State& state) {
  const std::size_t n = Elements(state);
  std::vector<double> a(n, 1.0), c(n, 0.0);
  double* __restrict pa = a.data();
  double* __restrict pc = c.data();
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) pc[i] = pa[i];
    benchmark::DoNotOptimize(pc);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(2 * n * sizeof(double)));
}

void BM_StreamTriad(benchmark::State& state) {
  const std::size_t n = Elements(state);
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  double* __restrict pa = a.data();
  const double* __restrict pb = b.data();
  const double* __restrict pc = c.data();
  const double s = 3.0;
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; ++i) pa[i] = pb[i] + s * pc[i];
    benchmark::DoNotOptimize(pa);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(3 * n * sizeof(double)));
}

BENCHMARK(BM_StreamCopy)->Arg(1)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamTriad)->Arg(1)->Arg(8)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

}  // namespace
