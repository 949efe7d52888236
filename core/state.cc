#include "core/state.h"

#include <array>
#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

constexpr char kMagic[4] = {'F', '2', 'S', 'T'};
// Version 2 appends RunningMetrics' unconverged counts; version 1 records
// (without them) still decode, with both counts 0.
constexpr uint32_t kVersion = 2;

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
    for (Eigen::Index i = 0; i < v.size(); ++i) F64(v[i]);
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
    for (uint64_t i = 0; i < n; ++i) F64(&(*v)[static_cast<Eigen::Index>(i)]);
    return true;
  }
  bool empty() const { return in_.empty(); }

 private:
  absl::string_view in_;
};

bool BitEqual(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }
bool BitEqual(const Vector& a, const Vector& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

}  // namespace

bool SessionState::AllFinite() const {
  if (!x.allFinite() || !y.allFinite() || !z.allFinite()) return false;
  if (!std::isfinite(lambda)) return false;
  for (const Vector& v : aux)
    if (!v.allFinite()) return false;
  return true;
}

bool SessionState::BitEquals(const SessionState& o) const {
  if (t != o.t || !BitEqual(x, o.x) || !BitEqual(y, o.y) || !BitEqual(z, o.z) ||
      !BitEqual(lambda, o.lambda) || !(rng == o.rng) ||
      inner_iterations != o.inner_iterations || cap_hits != o.cap_hits ||
      rows_processed != o.rows_processed || aux.size() != o.aux.size()) {
    return false;
  }
  for (size_t i = 0; i < aux.size(); ++i)
    if (!BitEqual(aux[i], o.aux[i])) return false;
  const RunningMetrics& a = metrics;
  const RunningMetrics& b = o.metrics;
  return a.evaluated_steps == b.evaluated_steps && BitEqual(a.blreg, b.blreg) &&
         BitEqual(a.variation, b.variation) && BitEqual(a.drift, b.drift) &&
         a.drift_steps == b.drift_steps && a.unconverged_steps == b.unconverged_steps &&
         a.unconverged_drift_steps == b.unconverged_drift_steps;
}

std::string SerializeState(const SessionState& s) {
  Writer w;
  w.Raw(kMagic, 4);
  w.U64(kVersion);
  w.I64(s.t);
  w.Vec(s.x);
  w.Vec(s.y);
  w.Vec(s.z);
  w.F64(s.lambda);
  for (uint64_t word : s.rng.words()) w.U64(word);
  w.I64(s.inner_iterations);
  w.I64(s.cap_hits);
  w.I64(s.rows_processed);
  w.U64(s.aux.size());
  for (const Vector& v : s.aux) w.Vec(v);
  w.I64(s.metrics.evaluated_steps);
  w.F64(s.metrics.blreg);
  w.F64(s.metrics.variation);
  w.F64(s.metrics.drift);
  w.I64(s.metrics.drift_steps);
  w.I64(s.metrics.unconverged_steps);
  w.I64(s.metrics.unconverged_drift_steps);
  w.U64(Fnv1a(w.out().data(), w.out().size()));
  return std::move(w.out());
}

absl::Status ValidateState(const SessionState& s, int x_dim, int y_dim, bool reads_lambda) {
  const auto vector = [](const Vector& v, int dim, const char* field) -> absl::Status {
    if (v.size() != dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.", field, ": has ", v.size(), " entries, expected ", dim));
    }
    if (!v.allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat("state.", field, ": not finite"));
    }
    return absl::OkStatus();
  };
  if (absl::Status st = vector(s.x, x_dim, "x"); !st.ok()) return st;
  if (absl::Status st = vector(s.y, y_dim, "y"); !st.ok()) return st;
  if (absl::Status st = vector(s.z, y_dim, "z"); !st.ok()) return st;
  if (s.t < 1 || s.t > kMaxStepIndex) {
    return absl::InvalidArgumentError(
        absl::StrCat("state.t: ", s.t, " is outside [1, 2^53]"));
  }
  const std::array<uint64_t, 4>& words = s.rng.words();
  if (words[0] == 0 && words[1] == 0 && words[2] == 0 && words[3] == 0) {
    return absl::InvalidArgumentError(
        "state.rng: all-zero generator state (xoshiro256** would draw only zeros)");
  }
  if (reads_lambda && !(std::isfinite(s.lambda) && s.lambda > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("state.lambda: ", s.lambda, " is not a finite positive number"));
  }
  for (size_t i = 0; i < s.aux.size(); ++i) {
    if (!s.aux[i].allFinite()) {
      return absl::InvalidArgumentError(absl::StrCat("state.aux[", i, "]: not finite"));
    }
  }
  if (!std::isfinite(s.lambda)) {
    return absl::InvalidArgumentError("state.lambda: not finite");
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionState> DeserializeState(absl::string_view bytes) {
  if (bytes.size() < 4 + 8 + 8 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return absl::DataLossError("session state: bad magic or truncated header");
  }
  const absl::string_view body = bytes.substr(0, bytes.size() - 8);
  Reader tail(bytes.substr(bytes.size() - 8));
  uint64_t checksum = 0;
  tail.U64(&checksum);
  if (checksum != Fnv1a(body.data(), body.size())) {
    return absl::DataLossError("session state: checksum mismatch (corrupt record)");
  }
  Reader r(body.substr(4));
  uint64_t version = 0;
  r.U64(&version);
  if (version != 1 && version != kVersion) {
    return absl::DataLossError(
        absl::StrCat("session state: unsupported version ", version));
  }
  SessionState s;
  std::array<uint64_t, 4> words{};
  uint64_t aux_count = 0;
  bool ok = r.I64(&s.t) && r.Vec(&s.x) && r.Vec(&s.y) && r.Vec(&s.z) &&
            r.F64(&s.lambda);
  for (auto& word : words) ok = ok && r.U64(&word);
  ok = ok && r.I64(&s.inner_iterations) && r.I64(&s.cap_hits) &&
       r.I64(&s.rows_processed) && r.U64(&aux_count) && aux_count < (1u << 20);
  if (ok) s.aux.resize(aux_count);
  for (uint64_t i = 0; ok && i < aux_count; ++i) ok = r.Vec(&s.aux[i]);
  ok = ok && r.I64(&s.metrics.evaluated_steps) && r.F64(&s.metrics.blreg) &&
       r.F64(&s.metrics.variation) && r.F64(&s.metrics.drift) &&
       r.I64(&s.metrics.drift_steps);
  if (version >= 2) {
    ok = ok && r.I64(&s.metrics.unconverged_steps) &&
         r.I64(&s.metrics.unconverged_drift_steps);
  }
  ok = ok && r.empty();
  if (!ok) return absl::DataLossError("session state: malformed body");
  s.rng = Rng::FromWords(words);
  return s;
}

}  // namespace f2obo
