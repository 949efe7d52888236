// Algorithm hyperparameters: one flat struct serves every algorithm of every
// problem class (Ceres-style); each algorithm reads the fields its registry
// entry lists (AlgorithmInfo::reads, core/algorithm_info.h).  The fields,
// their defaults, rules and help texts are declared once, in
// core/options.def; this header turns that list into the struct, an
// `Opt` enumerator per option and a table for generic code (validation,
// proto conversion, CLI flags, help).
#ifndef F2OBO_CORE_OPTIONS_H_
#define F2OBO_CORE_OPTIONS_H_

#include <bitset>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace f2obo {

inline constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Every real option and every input number is at most this in magnitude, so
// that a product of two of them stays finite (SPEC: bad input never bricks
// a session).
inline constexpr double kMaxOptionMagnitude = 1e150;

// How F2OBO / AF2OBO scale the y-step with lambda_t.
enum class BetaScaling {
  kScaled,  // beta_t = beta / lambda_t  (theory: beta_t <= 1/(2 lambda_t L_g1))
  kFixed,   // beta_t = beta
};

// SF2OBO's inner iteration count K_t.
enum class InnerSchedule {
  kFixed,   // K_t = inner_steps
  kTheory,  // K_t = ceil(c_K max(t^(b - tau), t^a) log(t + 1))  (Theorem 5.1)
};

// How F2OBO / AF2OBO grow the penalty multiplier lambda_t.
enum class LambdaSchedule {
  kPaper,   // lambda_{t+1} = (1 + 1/t)^tau lambda_t: lambda_t = lambda_1 t^tau (Alg. 1 line 11)
  kFollow,  // (1 + 1/t)^tau while the inner loops keep up, else (1 + 1/t)^(tau/2)
            // (NextLambdaFollowing)
};

// The upper step size of the F2OBO rounds.
enum class GammaSchedule {
  kConstant,  // gamma_t = gamma (the paper's experiments)
  kTheory,    // gamma_t = gamma t^-tau  (Theorem 3.2 takes gamma_t ~ 1/(lambda_1 t^tau))
};

// The values an option accepts, whatever algorithm reads it: a closed or
// half-open interval of finite numbers (within kMaxOptionMagnitude), or
// +infinity too (a "none" value), or anything (booleans, choices).
struct OptionRule {
  double lo = -kMaxOptionMagnitude;
  double hi = kMaxOptionMagnitude;
  bool lo_open = false;
  bool hi_open = false;
  bool infinity_allowed = false;
  bool any = false;
  // The option counts iterations of a round (IterationCount): a server caps
  // it at its --max_inner_iterations too.
  bool iterations = false;

  bool Accepts(double v) const;
  std::string Describe() const;  // e.g. "must be finite and > 0"
};
constexpr OptionRule Positive() { return {0.0, kMaxOptionMagnitude, true, false, false, false}; }
constexpr OptionRule PositiveOrInfinite() {
  return {0.0, kMaxOptionMagnitude, true, false, true, false};
}
constexpr OptionRule InRange(double lo, double hi) { return {lo, hi, false, false, false, false}; }
constexpr OptionRule InRangeOpenHigh(double lo, double hi) {
  return {lo, hi, false, true, false, false};
}
constexpr OptionRule AtLeast(double lo) { return {lo, 2147483647.0, false, false, false, false}; }
constexpr OptionRule AnyValue() { return {0, 0, false, false, false, true}; }
// An integer count of iterations of one round, in [1, hi]: the server also
// caps it at its max_inner_iterations (the only list of such options).
constexpr OptionRule IterationCount(double hi = 2147483647.0) {
  return {1.0, hi, false, false, false, false, true};
}

struct AlgorithmOptions {
#define F2OBO_OPTION(type, name, def, rule, help) type name = def;
#include "core/options.def"
#undef F2OBO_OPTION
};

// Whether the inner step sizes are estimated from the step's batches:
// asked for (alpha_auto, beta_auto) or left at 0, the default (options.def).
inline bool AlphaIsAuto(const AlgorithmOptions& o) { return o.alpha_auto || o.alpha == 0.0; }
inline bool BetaIsAuto(const AlgorithmOptions& o) { return o.beta_auto || o.beta == 0.0; }

// One enumerator per option, in declaration order: Opt::lambda1, ...
enum class Opt {
#define F2OBO_OPTION(type, name, def, rule, help) name,
#include "core/options.def"
#undef F2OBO_OPTION
  kCount
};
inline constexpr int kOptionCount = static_cast<int>(Opt::kCount);

// A set of options (what an algorithm reads).
class OptionSet {
 public:
  OptionSet() = default;
  OptionSet(std::initializer_list<Opt> options) {
    for (Opt o : options) Add(o);
  }
  OptionSet& Add(Opt o) {
    bits_.set(static_cast<size_t>(o));
    return *this;
  }
  OptionSet& Add(const OptionSet& o) {
    bits_ |= o.bits_;
    return *this;
  }
  bool Has(Opt o) const { return bits_.test(static_cast<size_t>(o)); }
  bool empty() const { return bits_.none(); }

 private:
  std::bitset<kOptionCount> bits_;
};

enum class OptionType { kDouble, kInt, kBool, kChoice };

// What generic code (validation, proto conversion, CLI, help) knows of an
// option.  Values cross this interface as doubles (double, int, bool: 0/1)
// or, for choices, as the choice's name.
struct OptionInfo {
  Opt id;
  const char* name;
  OptionType type;
  OptionRule rule;
  const char* help;
  std::vector<std::string> choices;  // kChoice: names, in enum order
  double default_value;              // as `get` returns it

  // The value as a number: double, int, bool (0/1), choice (its index).
  double (*get)(const AlgorithmOptions&);
  void (*set)(AlgorithmOptions*, double);  // no check; see SetOptionNumber
};

// Every option, in declaration order (indexable by Opt).
const std::vector<OptionInfo>& OptionTable();
const OptionInfo& GetOptionInfo(Opt id);
// nullptr for an unknown name.
const OptionInfo* FindOption(absl::string_view name);

// Sets an option from a number (double, int, bool options; an int must be
// integral and fit, a bool 0 or 1) or a choice name; INVALID_ARGUMENT
// "options.<name>: ..." otherwise.  Rules are checked by ValidateOptions.
absl::Status SetOptionNumber(const OptionInfo& info, double value, AlgorithmOptions* o);
absl::Status SetOptionChoice(const OptionInfo& info, absl::string_view value, AlgorithmOptions* o);
// The value as text ("0.1", "5", "true", "scaled"), e.g. for help and specs.
std::string OptionValueText(const OptionInfo& info, const AlgorithmOptions& o);

// The options whose rule is an IterationCount, in declaration order.
std::vector<Opt> IterationOptions();

// Checks each option in `reads` against its rule; the error is
// INVALID_ARGUMENT "options.<name>: <value> <rule>".
absl::Status ValidateOptions(const AlgorithmOptions& o, const OptionSet& reads);

}  // namespace f2obo

#endif  // F2OBO_CORE_OPTIONS_H_
