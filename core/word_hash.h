// A fast 64-bit checksum of byte strings, for stored and exported records
// (core/state.cc's state encoding, server/store's record sums).
//
// Why not FNV-1a, which these records used before: FNV-1a takes one byte
// per multiply-latency (~4 cycles a byte), so checksumming a 100 KB state
// twice per step cost ~0.3 ms, more than many rounds (a profile of the
// service path; bench/RESULTS.md's history).  WordHash reads 8-byte little-endian words into four
// independent lanes (~5 cycles per 32 bytes) and keeps FNV-1a's guarantee:
//
//   Every change confined to one 8-byte word of the input (so every
//   single-byte change) changes the hash.  Each lane step
//   l <- rotl((l ^ w) * M, 31) is a bijection of l for a fixed word and of
//   w for a fixed l, and so are the steps that fold the lanes, the length
//   and the final mix; a changed word therefore changes its lane's value,
//   which stays changed to the end.
//
// Other errors (several words, a different length) change it with
// probability ~1 - 2^-64 for unstructured damage.  Not a cryptographic hash.
//
// The definition is part of the stored format (state encoding version 4,
// store schema version 4): changing it needs a new version of both.
#ifndef F2OBO_CORE_WORD_HASH_H_
#define F2OBO_CORE_WORD_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace f2obo {

// The hash of `bytes` under `seed`.  Definition (little-endian words; the
// last partial word, if any, zero-padded):
//   lane[i] = seed ^ kLaneInit[i]                        i = 0..3
//   word k goes to lane k % 4: lane = rotl((lane ^ word) * kMul, 31)
//   h = seed; for i = 0..3: h = rotl((h ^ lane[i]) * kMul, 31)
//   h = Mix64(h ^ size)      (MurmurHash3's fmix64, a bijection)
uint64_t WordHash(uint64_t seed, absl::string_view bytes);

}  // namespace f2obo

#endif  // F2OBO_CORE_WORD_HASH_H_
