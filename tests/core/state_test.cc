#include "core/state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/batch.h"
#include "core/bilevel/bilevel_state.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

// A bilevel-shaped state: x 5, y and z 9, lambda.
const StateLayout kLayout = BilevelLayout(9);

SessionState RandomState() {
  std::mt19937_64 rng(61);
  SessionState s;
  s.t = 1234;
  s.x = testing::RandomVector(5, rng);
  s.vectors = {testing::RandomVector(9, rng), testing::RandomVector(9, rng)};
  s.scalars = {0.1 + 1.0 / 3.0};  // not exactly representable: bits must survive
  s.rng = Rng(77);
  s.rng.Next();
  s.inner_iterations = 99;
  s.cap_hits = 2;
  s.rows_processed = 1ll << 40;
  s.aux = {testing::RandomVector(3, rng), Vector()};
  return s;
}

Checkpoint RandomCheckpoint() {
  Checkpoint c;
  c.family = "quadratic";
  c.algorithm = "sogd";
  c.state = RandomState();
  c.metrics.evaluated_steps = 10;
  c.metrics.sums = {1e-300, 3.5, 2.25, 9.0, 3.0, 4.0};
  return c;
}

TEST(Checkpoint, SerializationRoundTripsBitExactly) {
  const Checkpoint c = RandomCheckpoint();
  const auto back = DeserializeCheckpoint(SerializeCheckpoint(c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->state.BitEquals(c.state));
  EXPECT_TRUE(back->metrics.BitEquals(c.metrics));
  EXPECT_EQ(back->family, "quadratic");
  EXPECT_EQ(back->algorithm, "sogd");
  EXPECT_EQ(back->state.rng.words(), c.state.rng.words());
}

TEST(Checkpoint, RejectsEveryTruncationAndAnyFlippedByte) {
  const std::string bytes = SerializeCheckpoint(RandomCheckpoint());
  for (size_t n = 0; n < bytes.size(); n += 7) {
    EXPECT_FALSE(DeserializeCheckpoint(bytes.substr(0, n)).ok()) << "length " << n;
  }
  for (size_t i = 0; i < bytes.size(); i += 5) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    const auto r = DeserializeCheckpoint(bad);
    ASSERT_FALSE(r.ok()) << "byte " << i;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  }
}

// The version-1 and version-2 encodings (bilevel only, written before
// problem classes; version 2 appends the two unconverged-term counts), built
// here field by field from their documented layout.
std::string BilevelVersionBytes(int version, const SessionState& s, const Vector& y,
                                const Vector& z, double lambda, const RunningMetrics& m) {
  std::string out;
  const auto u64 = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  };
  const auto f64 = [&](double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    u64(bits);
  };
  const auto vec = [&](const Vector& v) {
    u64(v.size());
    for (Eigen::Index i = 0; i < v.size(); ++i) f64(v[i]);
  };
  out.append("F2ST", 4);
  u64(version);
  u64(static_cast<uint64_t>(s.t));
  vec(s.x);
  vec(y);
  vec(z);
  f64(lambda);
  for (uint64_t w : s.rng.words()) u64(w);
  u64(s.inner_iterations);
  u64(s.cap_hits);
  u64(s.rows_processed);
  u64(s.aux.size());
  for (const Vector& v : s.aux) vec(v);
  u64(m.evaluated_steps);
  for (int i = 0; i < 3; ++i) f64(m.sums[i]);
  u64(static_cast<uint64_t>(m.sums[3]));
  if (version >= 2) {
    u64(static_cast<uint64_t>(m.sums[4]));
    u64(static_cast<uint64_t>(m.sums[5]));
  }
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char ch : out) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  u64(h);
  return out;
}

TEST(Checkpoint, DecodesVersionOneStatesIntoTheBilevelLayoutWithZeroUnconvergedCounts) {
  Checkpoint c = RandomCheckpoint();
  const SessionState& s = c.state;
  const auto back = DeserializeCheckpoint(
      BilevelVersionBytes(1, s, s.vectors[0], s.vectors[1], s.scalars[0], c.metrics));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->state.BitEquals(s));
  c.metrics.sums[4] = c.metrics.sums[5] = 0.0;  // version 1 did not count them
  EXPECT_TRUE(back->metrics.BitEquals(c.metrics));
  EXPECT_EQ(back->family, "");  // version 1 did not record them
  EXPECT_EQ(back->algorithm, "");
  EXPECT_TRUE(ValidateState(back->state, kLayout, 5, kMaxStateMagnitude).ok());
}

TEST(Checkpoint, DecodesVersionTwoStatesWithTheirUnconvergedCounts) {
  const Checkpoint c = RandomCheckpoint();
  const SessionState& s = c.state;
  const std::string v2 =
      BilevelVersionBytes(2, s, s.vectors[0], s.vectors[1], s.scalars[0], c.metrics);
  const auto back = DeserializeCheckpoint(v2);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->state.BitEquals(s));
  EXPECT_TRUE(back->metrics.BitEquals(c.metrics));
  // Re-encoded, it is a current-version record of the same checkpoint.
  const auto again = DeserializeCheckpoint(SerializeCheckpoint(*back));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->BitEquals(*back));
}

// `bytes` (a current encoding) rewritten as another version's record: the
// version word replaced and the FNV-1a checksum of versions 1-3 appended.
std::string AsFnvVersion(std::string bytes, uint64_t version) {
  bytes.resize(bytes.size() - 8);
  for (int i = 0; i < 8; ++i) bytes[4 + i] = static_cast<char>(version >> (8 * i));
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char ch : bytes) {
    h ^= static_cast<unsigned char>(ch);
    h *= 0x100000001b3ULL;
  }
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>(h >> (8 * i)));
  return bytes;
}

TEST(Checkpoint, DecodesVersionThreeStatesWithTheirFnvChecksum) {
  // Version 4 changed only the checksum (WordHash): version-3 records, in
  // stores and export files, still decode, and their damage is still seen.
  const Checkpoint c = RandomCheckpoint();
  const std::string v3 = AsFnvVersion(SerializeCheckpoint(c), 3);
  const auto back = DeserializeCheckpoint(v3);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEquals(c));
  std::string damaged = v3;
  damaged[40] = static_cast<char>(damaged[40] ^ 1);
  EXPECT_THAT(DeserializeCheckpoint(damaged).status().message(), HasSubstr("checksum mismatch"));
  // A version-3 record with a WordHash checksum is not accepted either.
  std::string v3_wordhash = SerializeCheckpoint(c);
  v3_wordhash[4] = 3;
  EXPECT_THAT(DeserializeCheckpoint(v3_wordhash).status().message(),
              HasSubstr("checksum mismatch"));
}

TEST(Checkpoint, ResealMakesAChangedRecordOfEitherChecksumDecodeAgain) {
  const Checkpoint c = RandomCheckpoint();
  for (uint64_t version : {3, 4}) {
    std::string bytes = SerializeCheckpoint(c);
    if (version == 3) bytes = AsFnvVersion(bytes, 3);
    // The last byte of the last running sum (just before the checksum).
    bytes[bytes.size() - 9] = static_cast<char>(bytes[bytes.size() - 9] ^ 0x40);
    ASSERT_FALSE(DeserializeCheckpoint(bytes).ok()) << version;
    ResealEncodedState(&bytes);
    const auto back = DeserializeCheckpoint(bytes);
    ASSERT_TRUE(back.ok()) << version << ": " << back.status();
    EXPECT_TRUE(back->state.BitEquals(c.state)) << version;
    EXPECT_FALSE(back->metrics.BitEquals(c.metrics)) << version;
  }
}

TEST(Checkpoint, AFutureVersionIsRefusedNamingIt) {
  const std::string v9 = AsFnvVersion(SerializeCheckpoint(RandomCheckpoint()), 9);
  const absl::Status st = DeserializeCheckpoint(v9).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), HasSubstr("unsupported version 9"));
}

TEST(SessionState, FirstOutOfRangeNamesTheVariable) {
  SessionState s = RandomState();
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e150), "");
  s.aux[0][1] = std::nan("");
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e150), "aux[0]");
  s.vectors[1][2] = 2e150;  // finite, beyond the bound
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e150), "z");
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e300), "aux[0]");
  s.scalars[0] = -std::numeric_limits<double>::infinity();
  s.vectors[1][2] = 0.0;
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e150), "lambda");
}

// Parts marked IsInput (a window's new segments: copies of rows checked as
// inputs) are not read by a check whose bound admits every input number;
// a tighter bound, or the same numbers in an unmarked part, are read.  (The
// NaN below breaks the mark's promise on purpose, to see it is skipped.)
TEST(SessionState, FirstOutOfRangeSkipsPartsMarkedAsInputs) {
  SessionState s = RandomState();
  const size_t i = s.aux.size();
  s.aux.push_back_empty();
  Vector& marked = s.aux.Fresh(i, 3, /*input=*/true);
  marked << 1.0, std::nan(""), 2e149;
  EXPECT_EQ(s.FirstOutOfRange(kLayout, kMaxInputMagnitude), "");
  EXPECT_EQ(s.FirstOutOfRange(kLayout, 1e100), absl::StrCat("aux[", i, "]"));
  s.aux.Fresh(i, 3, /*input=*/false) << 1.0, std::nan(""), 2e149;
  EXPECT_EQ(s.FirstOutOfRange(kLayout, kMaxInputMagnitude), absl::StrCat("aux[", i, "]"));
}

// ValidateState on RandomState() (x 5, y 9) with one field spoiled: the
// error is INVALID_ARGUMENT and names the field.
void ExpectRefused(const SessionState& s, const std::string& field) {
  const absl::Status st = ValidateState(s, kLayout, 5, kMaxStateMagnitude);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << field << ": " << st;
  EXPECT_NE(st.message().find(field), std::string::npos) << field << ": " << st;
}

TEST(SessionState, ValidateAcceptsAWellFormedState) {
  EXPECT_TRUE(ValidateState(RandomState(), kLayout, 5, kMaxStateMagnitude).ok());
  SessionState s = RandomState();
  s.t = int64_t{1} << 53;  // the largest index still exact as a double
  EXPECT_TRUE(ValidateState(s, kLayout, 5, kMaxStateMagnitude).ok());
  s.t = 1;
  EXPECT_TRUE(ValidateState(s, kLayout, 5, kMaxStateMagnitude).ok());
}

TEST(SessionState, ValidateRefusesAnAllZeroRngState) {
  // xoshiro256** from the all-zero state draws zeros forever.
  Rng zero = Rng::FromWords({0, 0, 0, 0});
  EXPECT_EQ(zero.Next(), 0u);
  EXPECT_EQ(zero.Next(), 0u);
  SessionState s = RandomState();
  s.rng = Rng::FromWords({0, 0, 0, 0});
  ExpectRefused(s, "state.rng");
  s.rng = Rng::FromWords({0, 0, 0, 1});  // one bit suffices
  EXPECT_TRUE(ValidateState(s, kLayout, 5, kMaxStateMagnitude).ok());
}

TEST(SessionState, ValidateRefusesStepIndicesOutsideOneToTwoPow53) {
  for (int64_t t : {int64_t{0}, int64_t{-1}, (int64_t{1} << 53) + 1,
                    std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
    SessionState s = RandomState();
    s.t = t;
    ExpectRefused(s, "state.t");
  }
}

TEST(SessionState, ValidateRefusesDimensionMismatchesAndOutOfRangeValues) {
  SessionState s = RandomState();
  s.x.resize(4);
  ExpectRefused(s, "state.x");
  s = RandomState();
  s.vectors[0].resize(10);
  ExpectRefused(s, "state.y");
  s = RandomState();
  s.vectors[1].resize(0);
  ExpectRefused(s, "state.z");
  s = RandomState();
  s.vectors[0][3] = std::numeric_limits<double>::infinity();
  ExpectRefused(s, "state.y");
  s = RandomState();
  s.vectors[0][3] = 1e200;  // finite, but past the safe magnitude
  ExpectRefused(s, "state.y");
  s = RandomState();
  s.aux[0][0] = std::nan("");
  ExpectRefused(s, "state.aux[0]");
  s = RandomState();
  s.scalars[0] = std::nan("");
  ExpectRefused(s, "state.lambda");
  s = RandomState();
  s.vectors.pop_back();  // a state of another problem class
  ExpectRefused(s, "problem class");
}

// Session::Restore adds the class's checks (lambda where it is read, the
// algorithm's aux layout) and refuses a state written by another
// algorithm or family.
TEST(SessionState, RestoreRefusesInvalidStatesWithInvalidArgument) {
  FamilyConfig fam;
  fam.name = "quadratic";
  fam.x_dim = 2;
  fam.y_dim = 3;
  const SessionConfig f2obo = testing::ConfigFor("f2obo", fam, ConstraintSet::Box(-1.0, 1.0));
  const SessionConfig sogd = testing::ConfigFor("sogd", fam, ConstraintSet::Box(-1.0, 1.0));
  const std::unique_ptr<Session> created = *Session::Create(f2obo);
  const Checkpoint good = *DeserializeCheckpoint(created->Encode(created->state()));
  ASSERT_TRUE(Session::Restore(f2obo, good).ok());
  const auto expect_refused = [](const absl::StatusOr<std::unique_ptr<Session>>& r,
                                 const std::string& field) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status();
  };

  Checkpoint c = good;
  c.state.scalars[0] = 0.0;
  expect_refused(Session::Restore(f2obo, c), "state.lambda");
  c.algorithm = "";  // a version-1 state: no algorithm recorded
  EXPECT_TRUE(Session::Restore(sogd, c).ok()) << "sogd does not read lambda";

  c = good;
  expect_refused(Session::Restore(sogd, c),
                 "spec.algorithm: 'sogd', but the state was "
                 "written by 'f2obo'");
  c.family = "ridge_hpo";
  expect_refused(Session::Restore(f2obo, c), "spec.family.name");

  c = good;
  c.algorithm = "";
  c.state.aux = {Vector::Zero(3)};  // sogd keeps v (3) and m (2)
  expect_refused(Session::Restore(sogd, c), "state.aux");
  c.state.aux = {Vector::Zero(3), Vector::Zero(2)};
  EXPECT_TRUE(Session::Restore(sogd, c).ok());

  c = good;
  c.state.rng = Rng::FromWords({0, 0, 0, 0});
  expect_refused(Session::Restore(f2obo, c), "state.rng");

  c = good;
  c.state.x.resize(3);
  expect_refused(Session::Restore(f2obo, c), "state.x: has 3 entries, expected 2");

  c = good;
  c.state.t = 0;
  expect_refused(Session::Restore(f2obo, c), "state.t");

  c = good;
  c.metrics.sums.push_back(1.0);
  expect_refused(Session::Restore(f2obo, c), "state.metrics");
  c.metrics.sums = {std::nan(""), 0, 0, 0};
  expect_refused(Session::Restore(f2obo, c), "state.metrics");
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
