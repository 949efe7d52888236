// Does this CPU run the code this binary was compiled for?
//
// The build compiles for F2OBO_ARCH (CMakeLists.txt): `native` by default, a
// baseline such as x86-64-v3 for portable images.  A binary started on a CPU
// that lacks one of those instruction-set extensions would die of SIGILL at
// some arbitrary point; mains call CheckCpuFeatures() first instead and exit
// with its message, which names the missing features and the baseline.
#ifndef F2OBO_CORE_CPU_FEATURES_H_
#define F2OBO_CORE_CPU_FEATURES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace f2obo {

// The F2OBO_ARCH value this binary was built with ("native", "none", ...).
const char* CompiledArch();

// The extensions (__builtin_cpu_supports names) the compiler was allowed to
// use in this build, from its predefined macros.
std::vector<std::string> CompiledCpuFeatures();

// OK when the running CPU has every CompiledCpuFeatures() entry; otherwise
// FailedPrecondition naming the missing ones and the F2OBO_ARCH to rebuild
// with.
absl::Status CheckCpuFeatures();

// The same check with the CPU's answers given: has(name) says whether the CPU
// supports `name` (tests use it to play a CPU without AVX2).
absl::Status CheckCpuFeatures(const std::vector<std::string>& compiled,
                              const std::function<bool(const std::string&)>& has);

}  // namespace f2obo

#endif  // F2OBO_CORE_CPU_FEATURES_H_
