#include "core/cpu_features.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifndef F2OBO_ARCH_NAME
#define F2OBO_ARCH_NAME "unknown"
#endif

namespace f2obo {
namespace {

// The compiler's macro for each extension paired with the name
// __builtin_cpu_supports knows it by.  Only extensions the compiler may emit
// on its own (vectorization, bit manipulation) are listed: the ones a
// -march=x86-64-v2..v4 or a current server CPU turns on.
struct Feature {
  bool compiled;
  const char* name;
};

#if defined(__x86_64__) || defined(__i386__)
constexpr Feature kFeatures[] = {
#ifdef __SSE3__
    {true, "sse3"},
#endif
#ifdef __SSSE3__
    {true, "ssse3"},
#endif
#ifdef __SSE4_1__
    {true, "sse4.1"},
#endif
#ifdef __SSE4_2__
    {true, "sse4.2"},
#endif
#ifdef __POPCNT__
    {true, "popcnt"},
#endif
#ifdef __AVX__
    {true, "avx"},
#endif
#ifdef __AVX2__
    {true, "avx2"},
#endif
#ifdef __FMA__
    {true, "fma"},
#endif
#ifdef __BMI__
    {true, "bmi"},
#endif
#ifdef __BMI2__
    {true, "bmi2"},
#endif
#ifdef __F16C__
    {true, "f16c"},
#endif
#ifdef __LZCNT__
    {true, "lzcnt"},
#endif
#ifdef __MOVBE__
    {true, "movbe"},
#endif
#ifdef __AVX512F__
    {true, "avx512f"},
#endif
#ifdef __AVX512CD__
    {true, "avx512cd"},
#endif
#ifdef __AVX512BW__
    {true, "avx512bw"},
#endif
#ifdef __AVX512DQ__
    {true, "avx512dq"},
#endif
#ifdef __AVX512VL__
    {true, "avx512vl"},
#endif
    {false, ""},  // keeps the array non-empty for SSE2-only builds
};
#endif

}  // namespace

const char* CompiledArch() { return F2OBO_ARCH_NAME; }

std::vector<std::string> CompiledCpuFeatures() {
  std::vector<std::string> out;
#if defined(__x86_64__) || defined(__i386__)
  for (const Feature& f : kFeatures) {
    if (f.compiled) out.emplace_back(f.name);
  }
#endif
  return out;
}

#if defined(__x86_64__) || defined(__i386__)
// __builtin_cpu_supports takes only a literal, hence one probe per name.
struct Probe {
  const char* name;
  bool (*has)();
};
#define F2OBO_PROBE(lit)                                 \
  {                                                      \
    lit, [] { return __builtin_cpu_supports(lit) != 0; } \
  }
const Probe kProbes[] = {
    F2OBO_PROBE("sse3"),     F2OBO_PROBE("ssse3"),    F2OBO_PROBE("sse4.1"),
    F2OBO_PROBE("sse4.2"),   F2OBO_PROBE("popcnt"),   F2OBO_PROBE("avx"),
    F2OBO_PROBE("avx2"),     F2OBO_PROBE("fma"),      F2OBO_PROBE("bmi"),
    F2OBO_PROBE("bmi2"),     F2OBO_PROBE("f16c"),     F2OBO_PROBE("lzcnt"),
    F2OBO_PROBE("movbe"),    F2OBO_PROBE("avx512f"),  F2OBO_PROBE("avx512cd"),
    F2OBO_PROBE("avx512bw"), F2OBO_PROBE("avx512dq"), F2OBO_PROBE("avx512vl"),
};
#undef F2OBO_PROBE
#endif

static bool CpuHas(const std::string& name) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  for (const Probe& p : kProbes) {
    if (name == p.name) return p.has();
  }
#endif
  (void)name;
  return false;
}

absl::Status CheckCpuFeatures() { return CheckCpuFeatures(CompiledCpuFeatures(), &CpuHas); }

absl::Status CheckCpuFeatures(const std::vector<std::string>& compiled,
                              const std::function<bool(const std::string&)>& has) {
  std::vector<std::string> missing;
  for (const std::string& name : compiled) {
    if (!has(name)) missing.push_back(name);
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("this binary was built with F2OBO_ARCH=", CompiledArch(), " but this CPU lacks ",
                   absl::StrJoin(missing, ", "),
                   "; rebuild on this machine (-DF2OBO_ARCH=native) or for a lower baseline "
                   "(e.g. -DF2OBO_ARCH=x86-64-v2, or none)"));
}

}  // namespace f2obo
