// The per-session random generator: xoshiro256** (Blackman & Vigna),
// seeded through splitmix64.  Chosen over <random> because its whole state
// is four words we serialize bit-exactly, and because every draw below is
// defined here, so trajectories are identical across compilers and runs
// (std::uniform_int_distribution is implementation-defined).
#ifndef F2OBO_CORE_RNG_H_
#define F2OBO_CORE_RNG_H_

#include <array>
#include <cstdint>

namespace f2obo {

class Rng {
 public:
  Rng() : Rng(0) {}
  explicit Rng(uint64_t seed);

  uint64_t Next();
  // Uniform integer in [0, n), n > 0, without modulo bias (Lemire 2019).
  uint64_t UniformBelow(uint64_t n);

  // Draws k distinct indices from [0, n) into out[0..k) by a partial
  // Fisher-Yates shuffle of perm[0..n), which the caller provides (n ints,
  // reinitialized here so the draw depends on the RNG state alone).
  void SampleWithoutReplacement(int n, int k, int* perm, int* out);

  const std::array<uint64_t, 4>& words() const { return s_; }
  static Rng FromWords(const std::array<uint64_t, 4>& words);
  bool operator==(const Rng& o) const { return s_ == o.s_; }

 private:
  std::array<uint64_t, 4> s_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_RNG_H_
