#include "core/state.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/batch.h"
#include "core/word_hash.h"

namespace f2obo {
namespace {

constexpr char kMagic[4] = {'F', '2', 'S', 'T'};
// 1: bilevel only (t, x, y, z, lambda, rng, counters, aux, sums).
// 2: version 1 plus the two unconverged-term counts of the exact metrics.
// 3: problem classes (family, algorithm, x, class vectors and scalars, ...).
// 4: version 3's layout with a WordHash checksum (core/word_hash.h) instead
//    of FNV-1a, which cost more than many rounds on large states.
constexpr uint32_t kVersion = 4;
constexpr uint64_t kWordHashSeed = 0x46325354;  // "F2ST"

// The checksum of versions 1-3.
uint64_t Fnv1a(const char* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ULL;
  }
  return h;
}

class Writer {
 public:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  void U64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    Raw(b, 8);
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void F64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    U64(bits);
  }
  void Vec(const Vector& v) {
    U64(static_cast<uint64_t>(v.size()));
    F64s(v.data(), static_cast<size_t>(v.size()));
  }
  template <typename Vectors>  // std::vector<Vector> or StateParts
  void Vecs(const Vectors& vs) {
    U64(vs.size());
    for (const Vector& v : vs) Vec(v);
  }
  void Doubles(const std::vector<double>& v) {
    U64(v.size());
    F64s(v.data(), v.size());
  }
  // n doubles as little-endian words: one copy on little-endian hosts.
  void F64s(const double* p, size_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n > 0) Raw(p, 8 * n);
#else
    for (size_t i = 0; i < n; ++i) F64(p[i]);
#endif
  }
  void Reserve(size_t n) { out_.reserve(n); }
  void Str(absl::string_view s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U64(uint64_t* v) {
    if (in_.size() < 8) return false;
    *v = 0;
    for (int i = 0; i < 8; ++i)
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t u;
    if (!U64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool F64(double* v) {
    uint64_t bits;
    if (!U64(&bits)) return false;
    std::memcpy(v, &bits, 8);
    return true;
  }
  bool Vec(Vector* v) {
    uint64_t n;
    if (!U64(&n) || n > in_.size() / 8) return false;
    v->resize(static_cast<Eigen::Index>(n));
    F64s(v->data(), n);
    return true;
  }
  bool Vecs(std::vector<Vector>* vs) {
    uint64_t n;
    if (!U64(&n) || n > in_.size() / 8) return false;
    vs->resize(n);
    for (Vector& v : *vs) {
      if (!Vec(&v)) return false;
    }
    return true;
  }
  bool Vecs(StateParts* vs) {
    uint64_t n;
    if (!U64(&n) || n > in_.size() / 8) return false;
    vs->clear();
    vs->resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      Vector v;
      if (!Vec(&v)) return false;
      // Empty parts stay null (the multi-task index pages of untouched
      // ranges): no allocation for them.
      if (v.size() > 0) vs->Set(i, std::move(v));
    }
    return true;
  }
  bool Doubles(std::vector<double>* v) {
    uint64_t n;
    if (!U64(&n) || n > in_.size() / 8) return false;
    v->resize(n);
    F64s(v->data(), n);
    return true;
  }
  // n doubles (the caller checked n <= what is left / 8).
  void F64s(double* p, uint64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n > 0) std::memcpy(p, in_.data(), 8 * n);
    in_.remove_prefix(8 * n);
#else
    for (uint64_t i = 0; i < n; ++i) F64(&p[i]);
#endif
  }
  bool Str(std::string* s) {
    uint64_t n;
    if (!U64(&n) || n > in_.size() || n > 4096) return false;
    s->assign(in_.data(), n);
    in_.remove_prefix(n);
    return true;
  }
  bool empty() const { return in_.empty(); }

 private:
  absl::string_view in_;
};

bool BitEqual(const Vector& a, const Vector& b) {
  // An empty Eigen vector's data() is null, which memcmp may not be given
  // even with a zero length (UBSan, the fuzzer: empty algorithm vectors).
  return a.size() == b.size() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0);
}

// `name` if some entry of v is not finite or exceeds `bound` (>= 0) in
// magnitude, else "".  One pass the compiler vectorizes: |v| <= bound
// exactly when the bits of v without the sign, as an unsigned integer, are
// at most those of the bound (non-negative doubles order as their bit
// patterns; infinities and NaNs lie above every finite one).  The loop
// that stopped at the first offender was not vectorized (a round's check
// read ~5% of an IR-FSCG step at d = 1,000).
std::string OutOfRange(const Vector& v, const std::string& name, double bound) {
  uint64_t limit;
  std::memcpy(&limit, &bound, sizeof(limit));
  uint64_t top = 0;
  for (Eigen::Index i = 0; i < v.size(); ++i) {
    uint64_t bits;
    std::memcpy(&bits, v.data() + i, sizeof(bits));
    bits &= ~(uint64_t{1} << 63);
    top = bits > top ? bits : top;
  }
  return top <= limit ? "" : name;
}

}  // namespace

std::string SessionState::FirstOutOfRange(const StateLayout& layout, double bound,
                                          const SessionState* unchanged_since) const {
  if (std::string f = OutOfRange(x, "x", bound); !f.empty()) return f;
  for (size_t i = 0; i < vectors.size(); ++i) {
    const std::string name =
        i < layout.vectors.size() ? layout.vectors[i].first : absl::StrCat("vectors[", i, "]");
    if (std::string f = OutOfRange(vectors[i], name, bound); !f.empty()) return f;
  }
  for (size_t i = 0; i < scalars.size(); ++i) {
    if (!(std::abs(scalars[i]) <= bound)) {
      return i < layout.scalars.size() ? layout.scalars[i] : absl::StrCat("scalars[", i, "]");
    }
  }
  std::string found;
  // A part marked IsInput holds only input numbers (|v| <= kMaxInputMagnitude,
  // finite): within any bound at least that large, so reading it again could
  // not find anything.  These are the row windows' new segments (the
  // check re-read each step's rows, ~5% of an IR-FSCG step at
  // d = 1,000); the rows were checked as inputs before the round
  // (Problem::ValidateData), and marking is in-process only (a restored part
  // is never marked, so ValidateState still reads every number).
  const bool skip_inputs = bound >= kMaxInputMagnitude;
  const auto check = [&](size_t i) {
    if (!found.empty() || (skip_inputs && aux.IsInput(i))) return;
    found = OutOfRange(aux[i], absl::StrCat("aux[", i, "]"), bound);
  };
  if (unchanged_since != nullptr) {
    aux.ForEachChanged(unchanged_since->aux, check);
  } else {
    for (size_t i = 0; i < aux.size(); ++i) check(i);
  }
  return found;
}

bool SessionState::BitEquals(const SessionState& o) const {
  const auto vectors_equal = [](const auto& a, const auto& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!BitEqual(a[i], b[i])) return false;
    return true;
  };
  return t == o.t && BitEqual(x, o.x) && vectors_equal(vectors, o.vectors) &&
         scalars.size() == o.scalars.size() &&
         (scalars.empty() ||
          std::memcmp(scalars.data(), o.scalars.data(), 8 * scalars.size()) == 0) &&
         rng == o.rng && inner_iterations == o.inner_iterations && cap_hits == o.cap_hits &&
         rows_processed == o.rows_processed && vectors_equal(aux, o.aux);
}

bool RunningMetrics::BitEquals(const RunningMetrics& o) const {
  return evaluated_steps == o.evaluated_steps && sums.size() == o.sums.size() &&
         (sums.empty() || std::memcmp(sums.data(), o.sums.data(), 8 * sums.size()) == 0);
}

std::string SerializeCheckpoint(const Checkpoint& c) {
  return SerializeState(c.family, c.algorithm, c.state, c.metrics, /*with_aux=*/true);
}

std::string SerializeCheckpointHead(const Checkpoint& c) {
  return SerializeState(c.family, c.algorithm, c.state, c.metrics, /*with_aux=*/false);
}

std::string EncodeAuxPart(const Vector& v) {
  Writer w;
  w.Reserve(8 * static_cast<size_t>(v.size()));
  w.F64s(v.data(), static_cast<size_t>(v.size()));
  return std::move(w.out());
}

absl::StatusOr<Checkpoint> DeserializeCheckpointHead(absl::string_view head, size_t parts) {
  absl::StatusOr<Checkpoint> c = DeserializeCheckpoint(head);
  if (!c.ok()) return c.status();
  if (!c->state.aux.empty()) {
    return absl::DataLossError("session state: a head of parts holds aux vectors of its own");
  }
  c->state.aux.resize(parts);
  return c;
}

absl::Status SetAuxPart(size_t i, absl::string_view bytes, Checkpoint* checkpoint) {
  if (bytes.size() % 8 != 0) {
    return absl::DataLossError(absl::StrCat("session state: aux part ", i, " has ", bytes.size(),
                                            " bytes, not a whole number of doubles"));
  }
  if (bytes.empty()) return absl::OkStatus();
  Vector v(static_cast<Eigen::Index>(bytes.size() / 8));
  Reader(bytes).F64s(v.data(), static_cast<uint64_t>(v.size()));
  checkpoint->state.aux.Set(i, std::move(v));
  return absl::OkStatus();
}

absl::StatusOr<Checkpoint> JoinCheckpoint(absl::string_view head,
                                          const std::vector<std::string>& parts) {
  absl::StatusOr<Checkpoint> c = DeserializeCheckpointHead(head, parts.size());
  if (!c.ok()) return c.status();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (absl::Status st = SetAuxPart(i, parts[i], &*c); !st.ok()) return st;
  }
  return c;
}

std::string SerializeState(absl::string_view family, absl::string_view algorithm,
                           const SessionState& s, const RunningMetrics& metrics, bool with_aux) {
  Writer w;
  // One allocation: the fixed fields, then every vector with its length.
  size_t words = 32 + s.x.size() + s.scalars.size() + metrics.sums.size();
  for (const Vector& v : s.vectors) words += 1 + v.size();
  if (with_aux) {
    for (const Vector& v : s.aux) words += 1 + v.size();
  }
  w.Reserve(8 * words + family.size() + algorithm.size());
  w.Raw(kMagic, 4);
  w.U64(kVersion);
  w.Str(family);
  w.Str(algorithm);
  w.I64(s.t);
  w.Vec(s.x);
  w.Vecs(s.vectors);
  w.Doubles(s.scalars);
  for (uint64_t word : s.rng.words()) w.U64(word);
  w.I64(s.inner_iterations);
  w.I64(s.cap_hits);
  w.I64(s.rows_processed);
  if (with_aux) {
    w.Vecs(s.aux);
  } else {
    w.U64(0);
  }
  w.I64(metrics.evaluated_steps);
  w.Doubles(metrics.sums);
  w.U64(WordHash(kWordHashSeed, w.out()));
  return std::move(w.out());
}

namespace {

// Version 1: the bilevel state before problem classes, decoded into the
// bilevel layout (vectors y, z; scalar lambda; sums blreg, variation, drift,
// drift_steps).
// Versions 1 and 2: the bilevel state before problem classes.
bool ReadBilevelVersion(Reader& r, uint64_t version, Checkpoint* c) {
  SessionState& s = c->state;
  Vector y, z;
  double lambda = 0.0;
  bool ok = r.I64(&s.t) && r.Vec(&s.x) && r.Vec(&y) && r.Vec(&z) && r.F64(&lambda);
  std::array<uint64_t, 4> words{};
  for (auto& word : words) ok = ok && r.U64(&word);
  ok = ok && r.I64(&s.inner_iterations) && r.I64(&s.cap_hits) && r.I64(&s.rows_processed) &&
       r.Vecs(&s.aux);
  double blreg = 0, variation = 0, drift = 0;
  int64_t drift_steps = 0;
  int64_t unconverged_steps = 0, unconverged_drift_steps = 0;
  ok = ok && r.I64(&c->metrics.evaluated_steps) && r.F64(&blreg) && r.F64(&variation) &&
       r.F64(&drift) && r.I64(&drift_steps);
  if (version >= 2) ok = ok && r.I64(&unconverged_steps) && r.I64(&unconverged_drift_steps);
  ok = ok && r.empty();
  if (!ok) return false;
  s.vectors = {std::move(y), std::move(z)};
  s.scalars = {lambda};
  s.rng = Rng::FromWords(words);
  // In BilevelSum order (core/bilevel/bilevel_state.h).
  c->metrics.sums = {blreg,
                     variation,
                     drift,
                     static_cast<double>(drift_steps),
                     static_cast<double>(unconverged_steps),
                     static_cast<double>(unconverged_drift_steps)};
  return true;
}

bool ReadVersion3(Reader& r, Checkpoint* c) {
  SessionState& s = c->state;
  bool ok = r.Str(&c->family) && r.Str(&c->algorithm) && r.I64(&s.t) && r.Vec(&s.x) &&
            r.Vecs(&s.vectors) && r.Doubles(&s.scalars);
  std::array<uint64_t, 4> words{};
  for (auto& word : words) ok = ok && r.U64(&word);
  ok = ok && r.I64(&s.inner_iterations) && r.I64(&s.cap_hits) && r.I64(&s.rows_processed) &&
       r.Vecs(&s.aux) && r.I64(&c->metrics.evaluated_steps) && r.Doubles(&c->metrics.sums) &&
       r.empty();
  if (ok) s.rng = Rng::FromWords(words);
  return ok;
}

}  // namespace

// The checksum a record of `version` carries over `body`.
uint64_t ChecksumOf(uint64_t version, absl::string_view body) {
  return version >= 4 ? WordHash(kWordHashSeed, body) : Fnv1a(body.data(), body.size());
}

void ResealEncodedState(std::string* bytes) {
  if (bytes->size() < 4 + 8 + 8) return;
  const size_t body = bytes->size() - 8;
  uint64_t version = 0;
  Reader(absl::string_view(*bytes).substr(4, 8)).U64(&version);
  const uint64_t h = ChecksumOf(version, absl::string_view(*bytes).substr(0, body));
  for (int i = 0; i < 8; ++i) (*bytes)[body + i] = static_cast<char>(h >> (8 * i));
}

absl::StatusOr<Checkpoint> DeserializeCheckpoint(absl::string_view bytes) {
  if (bytes.size() < 4 + 8 + 8 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return absl::DataLossError("session state: bad magic or truncated header");
  }
  const absl::string_view body = bytes.substr(0, bytes.size() - 8);
  Reader tail(bytes.substr(bytes.size() - 8));
  uint64_t checksum = 0;
  tail.U64(&checksum);
  Reader r(body.substr(4));
  uint64_t version = 0;
  r.U64(&version);  // not verified yet: it only picks the checksum to verify
  if (version == 0 || version > kVersion) {
    return absl::DataLossError(absl::StrCat("session state: unsupported version ", version,
                                            " (this server reads versions 1 to ", kVersion, ")"));
  }
  if (checksum != ChecksumOf(version, body)) {
    return absl::DataLossError("session state: checksum mismatch (corrupt record)");
  }
  Checkpoint c;
  bool ok = false;
  if (version == 1 || version == 2) {
    ok = ReadBilevelVersion(r, version, &c);
  } else {
    ok = ReadVersion3(r, &c);  // version 4: the same layout
  }
  if (!ok) return absl::DataLossError("session state: malformed body");
  return c;
}

absl::Status ValidateState(const SessionState& s, const StateLayout& layout, int x_dim,
                           double bound) {
  const auto shape = [](const Vector& v, int dim, const std::string& field) -> absl::Status {
    if (v.size() != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.", field, ": has ", v.size(), " entries, expected ", dim));
    }
    return absl::OkStatus();
  };
  if (absl::Status st = shape(s.x, x_dim, "x"); !st.ok()) return st;
  if (s.vectors.size() != layout.vectors.size() || s.scalars.size() != layout.scalars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state: holds ", s.vectors.size(), " vectors and ", s.scalars.size(),
                     " scalars; this session's problem class has ", layout.vectors.size(), " and ",
                     layout.scalars.size(), " (a state of another problem class?)"));
  }
  for (size_t i = 0; i < s.vectors.size(); ++i) {
    const auto& [name, dim] = layout.vectors[i];
    if (absl::Status st = shape(s.vectors[i], dim, name); !st.ok()) return st;
  }
  if (std::string f = s.FirstOutOfRange(layout, bound); !f.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("state.", f, ": not finite, or beyond the safe magnitude ", bound));
  }
  if (s.t < 1 || s.t > kMaxStepIndex) {
    return absl::InvalidArgumentError(absl::StrCat("state.t: ", s.t, " is outside [1, 2^53]"));
  }
  const std::array<uint64_t, 4>& words = s.rng.words();
  if (words[0] == 0 && words[1] == 0 && words[2] == 0 && words[3] == 0) {
    return absl::InvalidArgumentError(
        "state.rng: all-zero generator state (xoshiro256** would draw only zeros)");
  }
  return absl::OkStatus();
}

}  // namespace f2obo
