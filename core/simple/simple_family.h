// A family of the simple bilevel class (SPEC section 9):
//
//     min_{x in Z} f(x)   subject to   x in argmin_{z in Z} g(z),
//
// f and g convex and smooth in the single variable x.  Samples stream in
// like the bilevel families' batches: upper rows define f, inner rows
// define g; both are means over the rows they are given, so a sub-batch's
// value and gradient are unbiased estimates of the full batch's (the
// stochastic estimators of IR-SCG/IR-FSCG rely on it).  A family without
// rows for f (linear_inverse's f = 1/2 x^T Q x) ignores the upper view.
//
// Thread-safety: none; one instance per session (and one per metrics
// evaluator).  Scratch buffers may live in the instance.
#ifndef F2OBO_CORE_SIMPLE_SIMPLE_FAMILY_H_
#define F2OBO_CORE_SIMPLE_SIMPLE_FAMILY_H_

#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/batch.h"
#include "core/constraint.h"
#include "core/types.h"

namespace f2obo {

// The largest RowGradientBound a row may have.  A windowed algorithm keeps
// a row for window_rows steps and sums up to 2 spider_period - 1 (<= 2e5)
// such gradients in its variance-reduced estimates, and AGM-BiO forms
// products of gradients with points of Z (|x_j| <= 1e150): 1e100 keeps all
// of them far from the state bound (kMaxStateMagnitude, 1e150) and from
// overflow, so an accepted row cannot make a later round fail (without
// it, one least_squares row of 1e80 made every later ir_fscg step fail until
// it left the window).
inline constexpr double kMaxRowGradient = 1e100;

// One of IR-SCG's STORM evaluations (Giang-Tran et al., Alg. 1;
// core/simple/algorithms/ir_scg.cc) on a view's rows: with grad_x and
// grad_prev the gradients of f (role kUpper) or g (kInner) at x and prev
// on the view,
//   *estimate = keep before + (grad_x - keep grad_prev)   (prev != null)
//   *estimate = grad_x                                    (prev == null)
// and the values at x and, when `at` is non-null, at `at` (the prequential
// loss at the decision).  `estimate` is resized to x_dim and must not be
// `before`, x, prev or at.
struct StormPassIn {
  BatchRole role = BatchRole::kInner;
  const BatchView* view = nullptr;
  const Vector* x = nullptr;
  const Vector* prev = nullptr;
  const Vector* at = nullptr;
  double keep = 0.0;
  const Vector* before = nullptr;  // read only when prev != null
  // Whether the caller reads value_x: a family that pays for each value it
  // is asked (simple_oracle's client) may leave it unset (NaN) when not.
  bool value_x_read = true;
};
struct StormPassOut {
  double value_x = 0.0;
  double value_at = 0.0;
};

class SimpleFamily {
 public:
  virtual ~SimpleFamily() = default;

  virtual std::string_view name() const = 0;
  // Entries of x.
  virtual int x_dim() const = 0;
  // Whether f comes with a classification accuracy (logistic).
  virtual bool is_classification() const { return false; }
  // Whether f reads rows (false: f is fixed, e.g. linear_inverse's 1/2 x^T Q x,
  // and a step's upper batch may be empty).
  virtual bool upper_reads_rows() const { return true; }
  // Whether its rows reach the server (false for "simple_oracle", whose f
  // and g the client computes on rows it keeps): the windowed algorithms
  // and the class's exact metrics need them.
  virtual bool rows_on_server() const { return true; }
  // OK unless an evaluation of this step failed (only "simple_oracle"'s
  // can: its client answered badly, went silent or away); the failed
  // evaluations return NaN and the round must be discarded with this
  // status.
  virtual absl::Status RoundFailure() const { return absl::OkStatus(); }

  // Rejects a batch this family cannot use; INVALID_ARGUMENT naming the field
  // (e.g. "upper.dense: has 7 columns, expected features = 8").
  virtual absl::Status ValidateBatch(const Batch& batch, BatchRole role) const = 0;

  // A bound on what row `i` of `b` contributes to a gradient (each entry)
  // at any x with max_j |x_j| <= x_bound (finite), and, for families of
  // residuals, on its residual: the simple problem refuses a row beyond
  // kMaxRowGradient on arrival (ValidateStepBatch).  0: the family's
  // gradients need no bound beyond the input bound.
  virtual double RowGradientBound(const Batch& /*b*/, int /*i*/, double /*x_bound*/) const {
    return 0.0;
  }

  // A step's batch on arrival (SimpleProblem::ValidateData): ValidateBatch,
  // then, when x_bound (the largest |x_j| over Z) is finite, each row's
  // RowGradientBound against kMaxRowGradient (RowBoundError otherwise), so
  // that no accepted row can make a later round overflow (it stays in a
  // window, and in variance-reduced estimates, for many steps; over an
  // unbounded Z no row bound holds for every x, and only the input bound
  // applies).  A family may override it to read each row once for both
  // (least_squares: a dense row's largest |a_ij| is its input check and
  // its bound's max); it must return what this returns.
  virtual absl::Status ValidateStepBatch(const Batch& b, BatchRole role, double x_bound) const;
  // INVALID_ARGUMENT for row `i` of the step's batch of `role`, whose
  // RowGradientBound at x_bound is `bound` > kMaxRowGradient.
  absl::Status RowBoundError(BatchRole role, int i, double bound, double x_bound) const;

  // f(x) (mean over the upper view's rows) and, if `grad` is non-null, its
  // gradient (resized to x_dim and overwritten).
  virtual double F(const VecIn& x, const BatchView& upper, Vector* grad) = 0;
  // g(x) (mean over the inner view's rows) and, if non-null, its gradient.
  virtual double G(const VecIn& x, const BatchView& inner, Vector* grad) = 0;
  // Upper bounds on the Lipschitz constants of grad f and grad g over the
  // view's rows (e.g. ||A||_F^2 / n for least squares): used for AGM-BiO's
  // step sizes and the inner solve of the metrics.  Cheap (one pass).
  virtual double SmoothnessF(const BatchView& upper) = 0;
  virtual double SmoothnessG(const BatchView& inner) = 0;
  // Classification accuracy of x on the view (nullopt unless
  // is_classification()).
  virtual std::optional<double> Accuracy(const VecIn& /*x*/, const BatchView& /*upper*/) {
    return std::nullopt;
  }
  // f* = min f over argmin_{z in Z} g on the given rows, where the family
  // can compute it (linear_inverse: closed form for its known instances;
  // least_squares: a documented constrained / minimum-norm solve), with
  // the accuracy it is known to; nullopt otherwise.  Off the request path
  // (the metrics evaluator), may be expensive.
  virtual std::optional<double> OuterOptimum(const BatchView& /*upper*/, const BatchView& /*inner*/,
                                             const ConstraintSet& /*z*/) {
    return std::nullopt;
  }
  // Whether StormPass is available: a family whose f and g read rows may
  // evaluate the STORM update above in one walk over the view's rows
  // (least_squares: each row's margins at x, prev and at from one read of
  // the row, one scatter of the combined residual).  IR-SCG
  // calls F and G at x and prev otherwise.
  virtual bool HasStormPass() const { return false; }
  virtual StormPassOut StormPass(const StormPassIn& /*in*/, Vector* /*estimate*/) { return {}; }
  // The StormPasses of one iteration (f's and g's) together: out[i] and
  // *estimates[i] as StormPass(ins[i], estimates[i]).  A family whose
  // evaluations are remote (simple_oracle) asks them in one round trip;
  // the others walk their rows once per pass.
  virtual void StormPasses(absl::Span<const StormPassIn> ins, absl::Span<Vector* const> estimates,
                           absl::Span<StormPassOut> out) {
    for (size_t i = 0; i < ins.size(); ++i) out[i] = StormPass(ins[i], estimates[i]);
  }
  // The family's default initial point (before projection onto Z): 0.
  virtual Vector DefaultX() const { return Vector::Zero(x_dim()); }
};

}  // namespace f2obo

#endif  // F2OBO_CORE_SIMPLE_SIMPLE_FAMILY_H_
