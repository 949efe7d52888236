#include "core/word_hash.h"

#include <cstddef>
#include <cstring>

namespace f2obo {
namespace {

constexpr uint64_t kMul = 0x9e3779b97f4a7c15ULL;  // odd: multiplying is a bijection mod 2^64
constexpr uint64_t kLaneInit[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL,
                                   0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};

inline uint64_t Rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }
inline uint64_t Step(uint64_t lane, uint64_t word) { return Rotl((lane ^ word) * kMul, 31); }

inline uint64_t LoadLe64(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

inline uint64_t Mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

}  // namespace

uint64_t WordHash(uint64_t seed, absl::string_view bytes) {
  uint64_t lane[4];
  for (int i = 0; i < 4; ++i) lane[i] = seed ^ kLaneInit[i];
  const char* p = bytes.data();
  const size_t n = bytes.size();
  size_t k = 0;  // words consumed
  // Four independent dependency chains: the multiplies overlap.
  for (; (k + 4) * 8 <= n; k += 4) {
    lane[0] = Step(lane[0], LoadLe64(p + 8 * k));
    lane[1] = Step(lane[1], LoadLe64(p + 8 * k + 8));
    lane[2] = Step(lane[2], LoadLe64(p + 8 * k + 16));
    lane[3] = Step(lane[3], LoadLe64(p + 8 * k + 24));
  }
  for (; (k + 1) * 8 <= n; ++k) lane[k % 4] = Step(lane[k % 4], LoadLe64(p + 8 * k));
  if (const size_t rest = n - 8 * k; rest > 0) {
    char last[8] = {};
    std::memcpy(last, p + 8 * k, rest);
    lane[k % 4] = Step(lane[k % 4], LoadLe64(last));
  }
  uint64_t h = seed;
  for (int i = 0; i < 4; ++i) h = Step(h, lane[i]);
  return Mix64(h ^ static_cast<uint64_t>(n));
}

}  // namespace f2obo
