// WordHash (core/word_hash.h): its definition, checked against a
// byte-at-a-time reimplementation of the header's formula, and the
// guarantee the stored records rely on (every single-byte change is seen).
#include "core/word_hash.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <unordered_set>

namespace f2obo {
namespace {

uint64_t Rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

// The header's definition, spelled out with no bulk loads and no unrolling.
uint64_t ReferenceWordHash(uint64_t seed, const std::string& bytes) {
  const uint64_t mul = 0x9e3779b97f4a7c15ULL;
  const uint64_t init[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL,
                            0x082efa98ec4e6c89ULL};
  uint64_t lane[4];
  for (int i = 0; i < 4; ++i) lane[i] = seed ^ init[i];
  const size_t words = (bytes.size() + 7) / 8;
  for (size_t k = 0; k < words; ++k) {
    uint64_t w = 0;
    for (size_t b = 0; b < 8 && 8 * k + b < bytes.size(); ++b) {
      w |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[8 * k + b])) << (8 * b);
    }
    lane[k % 4] = Rotl((lane[k % 4] ^ w) * mul, 31);
  }
  uint64_t h = seed;
  for (int i = 0; i < 4; ++i) h = Rotl((h ^ lane[i]) * mul, 31);
  h ^= bytes.size();
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

std::string RandomBytes(size_t n, std::mt19937_64& rng) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

TEST(WordHash, MatchesItsDefinitionForEveryLengthAroundTheLaneBlock) {
  std::mt19937_64 rng(7);
  for (size_t n = 0; n <= 200; ++n) {
    const std::string s = RandomBytes(n, rng);
    for (uint64_t seed : {uint64_t{0}, uint64_t{0x46325354}, ~uint64_t{0}}) {
      EXPECT_EQ(WordHash(seed, s), ReferenceWordHash(seed, s)) << "n = " << n;
    }
  }
}

TEST(WordHash, EverySingleByteChangeChangesTheHash) {
  std::mt19937_64 rng(11);
  for (size_t n : {1, 7, 8, 9, 31, 32, 33, 64, 100, 257}) {
    const std::string s = RandomBytes(n, rng);
    const uint64_t h = WordHash(0, s);
    for (size_t i = 0; i < n; ++i) {
      for (int delta : {1, 0x80, 0xff}) {
        std::string t = s;
        t[i] = static_cast<char>(t[i] ^ delta);
        EXPECT_NE(WordHash(0, t), h) << "n = " << n << ", byte " << i << " ^ " << delta;
      }
    }
  }
}

TEST(WordHash, TrailingZeroBytesAndTheSeedChangeTheHash) {
  std::mt19937_64 rng(13);
  const std::string s = RandomBytes(13, rng);
  std::unordered_set<uint64_t> seen;
  for (size_t pad = 0; pad <= 24; ++pad) {  // the last word is zero-padded: the size decides
    EXPECT_TRUE(seen.insert(WordHash(0, s + std::string(pad, '\0'))).second) << pad;
  }
  EXPECT_NE(WordHash(1, s), WordHash(0, s));
  EXPECT_NE(WordHash(0, ""), WordHash(1, ""));
}

TEST(WordHash, SwappingTwoWordsChangesTheHash) {
  // The lanes are folded in order and each word goes to a fixed lane, so
  // a reordering of the input is not a no-op.
  std::mt19937_64 rng(17);
  const std::string s = RandomBytes(64, rng);
  for (size_t a = 0; a < 8; ++a) {
    for (size_t b = a + 1; b < 8; ++b) {
      std::string t = s;
      std::swap_ranges(t.begin() + 8 * a, t.begin() + 8 * a + 8, t.begin() + 8 * b);
      EXPECT_NE(WordHash(0, t), WordHash(0, s)) << a << " <-> " << b;
    }
  }
}

}  // namespace
}  // namespace f2obo
