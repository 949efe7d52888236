#include "core/state.h"

#include <random>

#include <gtest/gtest.h>

#include "tests/core/families/family_checks.h"

namespace f2obo {
namespace {

SessionState RandomState() {
  std::mt19937_64 rng(61);
  SessionState s;
  s.t = 1234;
  s.x = testing::RandomVector(5, rng);
  s.y = testing::RandomVector(9, rng);
  s.z = testing::RandomVector(9, rng);
  s.lambda = 0.1 + 1.0 / 3.0;  // not exactly representable: bits must survive
  s.rng = Rng(77);
  s.rng.Next();
  s.inner_iterations = 99;
  s.cap_hits = 2;
  s.rows_processed = 1ll << 40;
  s.aux = {testing::RandomVector(3, rng), Vector()};
  s.metrics.evaluated_steps = 10;
  s.metrics.blreg = 1e-300;
  s.metrics.variation = 3.5;
  s.metrics.drift = 2.25;
  s.metrics.drift_steps = 9;
  return s;
}

TEST(SessionState, SerializationRoundTripsBitExactly) {
  const SessionState s = RandomState();
  const auto back = DeserializeState(SerializeState(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEquals(s));
  EXPECT_EQ(back->rng.words(), s.rng.words());
}

TEST(SessionState, RejectsEveryTruncationAndAnyFlippedByte) {
  const std::string bytes = SerializeState(RandomState());
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_FALSE(DeserializeState(bytes.substr(0, n)).ok()) << "length " << n;
  }
  for (size_t i = 0; i < bytes.size(); i += 5) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    const auto r = DeserializeState(bad);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  }
}

TEST(SessionState, AllFiniteSpotsNaNAnywhere) {
  SessionState s = RandomState();
  EXPECT_TRUE(s.AllFinite());
  s.aux[0][1] = std::nan("");
  EXPECT_FALSE(s.AllFinite());
}

TEST(Rng, IsDeterministicAndRestorableFromItsWords) {
  Rng a(5), b(5);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), b.Next());
  Rng c = Rng::FromWords(a.words());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(a.Next(), c.Next());
  EXPECT_NE(Rng(5).Next(), Rng(6).Next());
}

TEST(Rng, SamplesDistinctIndicesUniformly) {
  Rng r(9);
  std::vector<int> perm(10), out(4), hits(10, 0);
  for (int trial = 0; trial < 20000; ++trial) {
    r.SampleWithoutReplacement(10, 4, perm.data(), out.data());
    std::vector<bool> seen(10, false);
    for (int i : out) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, 10);
      ASSERT_FALSE(seen[i]);
      seen[i] = true;
      ++hits[i];
    }
  }
  // Each index is drawn with probability 4/10: 8000 expected, sd ~ 69.
  for (int h : hits) EXPECT_NEAR(h, 8000, 400);
}

}  // namespace
}  // namespace f2obo
