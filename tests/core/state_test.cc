#include "core/state.h"

#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "core/session.h"
#include "tests/core/families/family_checks.h"
#include "tests/core/test_streams.h"

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
  s.metrics.unconverged_steps = 3;
  s.metrics.unconverged_drift_steps = 4;
  return s;
}

TEST(SessionState, SerializationRoundTripsBitExactly) {
  const SessionState s = RandomState();
  const auto back = DeserializeState(SerializeState(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEquals(s));
  EXPECT_EQ(back->rng.words(), s.rng.words());
}

// A record as version 1 wrote it: the same fields without the two
// unconverged counts at the end of the body.
std::string VersionOneRecord(const SessionState& s) {
  std::string body = SerializeState(s);
  body.resize(body.size() - 8 - 16);  // checksum, the two version-2 counts
  body[4] = 1;                        // version word, little-endian
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a, as the format specifies
  for (const char c : body) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  for (int i = 0; i < 8; ++i) body.push_back(static_cast<char>(h >> (8 * i)));
  return body;
}

TEST(SessionState, VersionOneRecordsDecodeWithZeroUnconvergedCounts) {
  SessionState s = RandomState();
  const auto back = DeserializeState(VersionOneRecord(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metrics.unconverged_steps, 0);
  EXPECT_EQ(back->metrics.unconverged_drift_steps, 0);
  s.metrics.unconverged_steps = 0;
  s.metrics.unconverged_drift_steps = 0;
  EXPECT_TRUE(back->BitEquals(s));
  // Re-encoded, it is a current-version record of the same state.
  const auto again = DeserializeState(SerializeState(*back));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->BitEquals(s));
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

// ValidateState on RandomState() (x 5, y 9) with one field spoiled: the
// error is INVALID_ARGUMENT and names the field.
void ExpectRefused(const SessionState& s, bool reads_lambda, const std::string& field) {
  const absl::Status st = ValidateState(s, 5, 9, reads_lambda);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << field << ": " << st;
  EXPECT_NE(st.message().find(field), std::string::npos) << field << ": " << st;
}

TEST(SessionState, ValidateAcceptsAWellFormedState) {
  EXPECT_TRUE(ValidateState(RandomState(), 5, 9, true).ok());
  SessionState s = RandomState();
  s.t = int64_t{1} << 53;  // the largest index still exact as a double
  EXPECT_TRUE(ValidateState(s, 5, 9, true).ok());
  s.t = 1;
  EXPECT_TRUE(ValidateState(s, 5, 9, true).ok());
}

TEST(SessionState, ValidateRefusesAnAllZeroRngState) {
  // xoshiro256** from the all-zero state draws zeros forever.
  Rng zero = Rng::FromWords({0, 0, 0, 0});
  EXPECT_EQ(zero.Next(), 0u);
  EXPECT_EQ(zero.Next(), 0u);
  SessionState s = RandomState();
  s.rng = Rng::FromWords({0, 0, 0, 0});
  ExpectRefused(s, false, "state.rng");
  s.rng = Rng::FromWords({0, 0, 0, 1});  // one bit suffices
  EXPECT_TRUE(ValidateState(s, 5, 9, false).ok());
}

TEST(SessionState, ValidateRefusesStepIndicesOutsideOneToTwoPow53) {
  for (int64_t t : {int64_t{0}, int64_t{-1}, (int64_t{1} << 53) + 1,
                    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    SessionState s = RandomState();
    s.t = t;
    ExpectRefused(s, false, "state.t");
  }
}

TEST(SessionState, ValidateRefusesUnusableLambdaOnlyWhereItIsRead) {
  for (double bad : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    SessionState s = RandomState();
    s.lambda = bad;
    ExpectRefused(s, /*reads_lambda=*/true, "state.lambda");
  }
  // Algorithms without a penalty ignore lambda: zero or negative is harmless,
  // but a non-finite number is refused everywhere (AllFinite would say so).
  SessionState s = RandomState();
  s.lambda = 0.0;
  EXPECT_TRUE(ValidateState(s, 5, 9, false).ok());
  s.lambda = -3.0;
  EXPECT_TRUE(ValidateState(s, 5, 9, false).ok());
  s.lambda = std::nan("");
  ExpectRefused(s, false, "state.lambda");
}

TEST(SessionState, ValidateRefusesDimensionMismatchesAndNonFiniteValues) {
  SessionState s = RandomState();
  s.x.resize(4);
  ExpectRefused(s, false, "state.x");
  s = RandomState();
  s.y.resize(10);
  ExpectRefused(s, false, "state.y");
  s = RandomState();
  s.z.resize(0);
  ExpectRefused(s, false, "state.z");
  s = RandomState();
  s.y[3] = std::numeric_limits<double>::infinity();
  ExpectRefused(s, false, "state.y");
  s = RandomState();
  s.aux[0][0] = std::nan("");
  ExpectRefused(s, false, "state.aux[0]");
}

// Session::Restore applies the checks with the algorithm's own view of lambda.
TEST(SessionState, RestoreRefusesInvalidStatesWithInvalidArgument) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  const SessionConfig f2obo = testing::ConfigFor("f2obo", fam, ConstraintSet::Box(-1.0, 1.0));
  const SessionConfig sogd = testing::ConfigFor("sogd", fam, ConstraintSet::Box(-1.0, 1.0));
  const SessionState good = (*Session::Create(f2obo))->state();
  ASSERT_TRUE(Session::Restore(f2obo, good).ok());

  SessionState s = good;
  s.lambda = 0.0;
  absl::StatusOr<std::unique_ptr<Session>> r = Session::Restore(f2obo, s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("state.lambda"), std::string::npos) << r.status();
  EXPECT_TRUE(Session::Restore(sogd, s).ok()) << "sogd does not read lambda";

  s = good;
  s.rng = Rng::FromWords({0, 0, 0, 0});
  r = Session::Restore(sogd, s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("state.rng"), std::string::npos) << r.status();

  s = good;
  s.x.resize(3);
  r = Session::Restore(f2obo, s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("state.x: has 3 entries, expected 2"), std::string::npos)
      << r.status();

  s = good;
  s.t = 0;
  r = Session::Restore(f2obo, s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("state.t"), std::string::npos) << r.status();
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
