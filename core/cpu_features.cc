#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifndef F2OBO_ARCH_NAME
#define F2OBO_ARCH_NAME "unknown"
#endif

namespace f2obo {
namespace {

// The compiler's macro for each extension paired with its name (GCC's
// __builtin_cpu_supports names; CpuHas reads them from CPUID).  Only extensions the compiler may
// emit on its own (vectorization, bit manipulation) are listed: the ones a -march=x86-64-v2..v4 or
// a current server CPU turns on.
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
// Read from CPUID directly rather than with __builtin_cpu_supports, whose
// accepted names differ between compilers (clang 14, which builds the
// fuzzer, knows neither "bmi2" nor "lzcnt").  Register bits from the Intel
// SDM vol. 2A, CPUID; AVX and AVX-512 also need the OS to save their
// registers (XCR0), as the builtin checks too.
static uint64_t Xcr0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

static bool CpuHas(const std::string& name) {
  unsigned a = 0, b = 0, c1 = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c1, &d)) return false;
  unsigned b7 = 0, c7 = 0, d7 = 0;
  if (!__get_cpuid_count(7, 0, &a, &b7, &c7, &d7)) b7 = 0;
  unsigned c81 = 0;
  if (!__get_cpuid(0x80000001, &a, &b, &c81, &d)) c81 = 0;
  const bool osxsave = (c1 >> 27) & 1;
  const uint64_t xcr0 = osxsave ? Xcr0() : 0;
  const bool os_avx = (xcr0 & 0x6) == 0x6;       // XMM and YMM state
  const bool os_avx512 = (xcr0 & 0xe6) == 0xe6;  // plus opmask and ZMM state
  const auto bit = [](unsigned reg, int i) { return ((reg >> i) & 1) != 0; };
  const struct {
    const char* name;
    bool has;
  } table[] = {
      {"sse3", bit(c1, 0)},
      {"ssse3", bit(c1, 9)},
      {"fma", bit(c1, 12) && os_avx},
      {"sse4.1", bit(c1, 19)},
      {"sse4.2", bit(c1, 20)},
      {"movbe", bit(c1, 22)},
      {"popcnt", bit(c1, 23)},
      {"avx", bit(c1, 28) && os_avx},
      {"f16c", bit(c1, 29) && os_avx},
      {"bmi", bit(b7, 3)},
      {"avx2", bit(b7, 5) && os_avx},
      {"bmi2", bit(b7, 8)},
      {"avx512f", bit(b7, 16) && os_avx512},
      {"avx512dq", bit(b7, 17) && os_avx512},
      {"avx512cd", bit(b7, 28) && os_avx512},
      {"avx512bw", bit(b7, 30) && os_avx512},
      {"avx512vl", bit(b7, 31) && os_avx512},
      {"lzcnt", bit(c81, 5)},
  };
  for (const auto& f : table) {
    if (name == f.name) return f.has;
  }
  return false;
}
#else
static bool CpuHas(const std::string&) { return false; }
#endif

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
