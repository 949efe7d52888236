#include "core/cpu_features.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"

namespace f2obo {
namespace {

bool Has(const std::string& name) {
  const auto f = CompiledCpuFeatures();
  return std::find(f.begin(), f.end(), name) != f.end();
}

// The build machine runs the tests, so it has what it compiled for.
TEST(CpuFeaturesTest, TheBuildMachinePassesItsOwnCheck) {
  EXPECT_TRUE(CheckCpuFeatures().ok()) << CheckCpuFeatures().message();
}

TEST(CpuFeaturesTest, ListsTheExtensionsTheCompilerWasAllowedToUse) {
#ifdef __AVX2__
  EXPECT_TRUE(Has("avx2"));
#else
  EXPECT_FALSE(Has("avx2"));
#endif
#ifdef __FMA__
  EXPECT_TRUE(Has("fma"));
#else
  EXPECT_FALSE(Has("fma"));
#endif
#ifdef __AVX512F__
  EXPECT_TRUE(Has("avx512f"));
#else
  EXPECT_FALSE(Has("avx512f"));
#endif
  EXPECT_FALSE(Has(""));
}

TEST(CpuFeaturesTest, NamesTheArchTheBuildWasConfiguredWith) {
  EXPECT_STRNE(CompiledArch(), "unknown");
}

TEST(CpuFeaturesTest, ACpuWithoutAvx2IsRefusedWithTheMissingFeaturesNamed) {
  const absl::Status s =
      CheckCpuFeatures({"sse4.2", "avx", "avx2", "fma"},
                       [](const std::string& n) { return n == "sse4.2" || n == "avx"; });
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("lacks avx2, fma"), absl::string_view::npos) << s.message();
  EXPECT_NE(s.message().find(std::string("F2OBO_ARCH=") + CompiledArch()), absl::string_view::npos);
}

TEST(CpuFeaturesTest, ACpuWithEveryFeatureIsAccepted) {
  EXPECT_TRUE(CheckCpuFeatures({"avx2", "fma"}, [](const std::string&) { return true; }).ok());
}

}  // namespace
}  // namespace f2obo
