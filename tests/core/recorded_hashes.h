// Trajectory hashes pinned per vector width.  Eigen's reductions and
// products sum in the order of the build's vector width, so a trajectory
// recorded on an AVX-512 + FMA build (-march=native on the development
// machine) is not the one an AVX2 + FMA build (x86-64-v3, the deploy
// baseline, or -march=native on a CPU without AVX-512) computes.  Each
// pinned trajectory is recorded in both; a build of another width (no FMA:
// the kernels' order is defined by the source only with FMA) checks none.
//
// Re-recording: a test prints the hash it computed when it differs; the
// AVX2 column comes from a build configured with -DF2OBO_ARCH=x86-64-v3.
#ifndef F2OBO_TESTS_CORE_RECORDED_HASHES_H_
#define F2OBO_TESTS_CORE_RECORDED_HASHES_H_

#include <cstdint>

namespace f2obo::testing {

enum class HashColumn { kAvx512Fma, kAvx2Fma, kNone };

constexpr HashColumn kThisBuildsColumn =
#if defined(__FMA__) && defined(__AVX512F__)
    HashColumn::kAvx512Fma;
#elif defined(__FMA__) && defined(__AVX2__)
    HashColumn::kAvx2Fma;
#else
    HashColumn::kNone;
#endif

constexpr char kNoRecordedColumn[] =
    "trajectories are recorded on AVX-512 + FMA and AVX2 + FMA builds only: other vector widths "
    "sum Eigen's reductions in another order";

// The recorded hash this build is held to.
constexpr uint64_t ForThisBuild(uint64_t avx512_fma, uint64_t avx2_fma) {
  return kThisBuildsColumn == HashColumn::kAvx512Fma ? avx512_fma : avx2_fma;
}

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_RECORDED_HASHES_H_
