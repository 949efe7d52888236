// The smoothness constants behind "auto" step sizes, and how they were
// obtained: computed by a family and reported with the round by every
// class that has automatic steps.
#ifndef F2OBO_CORE_SMOOTHNESS_H_
#define F2OBO_CORE_SMOOTHNESS_H_

namespace f2obo {

// How a Smoothness was obtained (reported with the round; proto's
// SmoothnessSource has the same members).
enum class SmoothnessSource {
  kNone,            // no step size is auto: nothing was computed
  kExact,           // constant Hessians with known norms (quadratic)
  kBatchBound,      // guaranteed upper bounds from the batch's row norms
  kPowerIteration,  // HVP power iteration times a safety factor (an estimate)
  kSecant,          // gradient differences of the inner iterates (a lower bound on the
                    // segment; core/bilevel/hypergradients/secant_steps.h)
};

// The smoothness constants used by "auto" step sizes.
struct Smoothness {
  double l_g1 = 0.0;  // ||grad2_yy g|| (operator norm)
  double l_f1 = 0.0;  // ||grad2_yy f||
  SmoothnessSource source = SmoothnessSource::kNone;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SMOOTHNESS_H_
