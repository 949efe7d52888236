// A problem family turns a step's batches into the pair (f_t, g_t) and
// answers first-order (and, for metrics and baselines, HVP) queries on them.
//
// Contract for every method below:
//  * x has x_dim() entries, y and v have y_dim() entries.
//  * Output pointers are caller-owned and already sized (gx: x_dim(),
//    gy / out: y_dim() or x_dim() as stated); they are overwritten.  A null
//    gradient pointer means "not needed" and skips that work.
//  * Batches passed in were accepted by ValidateBatch and Prepare.
//  * No heap allocation after Prepare(): scratch lives in the family object.
//    Hence a Family instance is NOT thread-safe; each session owns one.
//  * Values are means over the view's rows (plus the family's regularizer),
//    so a mini-batch view is an unbiased estimate of the full-batch value.
#ifndef F2OBO_CORE_FAMILY_H_
#define F2OBO_CORE_FAMILY_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/batch.h"
#include "core/constraint.h"
#include "core/family_config.h"
#include "core/types.h"

namespace f2obo {

enum class BatchRole { kUpper, kInner };

// How a Smoothness was obtained (reported with the round; proto's
// SmoothnessSource has the same members).
enum class SmoothnessSource {
  kNone,            // no step size is auto: nothing was computed
  kExact,           // constant Hessians with known norms (quadratic)
  kBatchBound,      // guaranteed upper bounds from the batch's row norms
  kPowerIteration,  // HVP power iteration times a safety factor (an estimate)
};

// The smoothness constants used by "auto" step sizes.
struct Smoothness {
  double l_g1 = 0.0;  // ||grad2_yy g|| (operator norm)
  double l_f1 = 0.0;  // ||grad2_yy f||
  SmoothnessSource source = SmoothnessSource::kNone;
};

class Family {
 public:
  virtual ~Family() = default;

  virtual std::string_view name() const = 0;
  virtual int x_dim() const = 0;
  virtual int y_dim() const = 0;
  // Whether f and the prequential metrics come with a classification accuracy.
  virtual bool is_classification() const { return false; }

  // Rejects a batch this family cannot use; the message names the field.
  virtual absl::Status ValidateBatch(const Batch& batch, BatchRole role) const = 0;
  // Rejects constraint sets on which g is not strongly convex in y.
  virtual absl::Status ValidateConstraint(const ConstraintSet& /*set*/) const {
    return absl::OkStatus();
  }
  // Sizes scratch for these batches.  May allocate; call before inner loops.
  virtual void Prepare(const StepData& data) = 0;

  // f on the upper batch: returns f(x, y), writes grad_x f and grad_y f.
  virtual double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx,
                   Vector* gy) = 0;
  // g on the inner batch: returns g(x, y), writes grad_x g and grad_y g.
  virtual double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx,
                   Vector* gy) = 0;
  // grad_y g at two points in one pass over the inner batch (F2OBO's z- and
  // y-loops, paper Alg. 1 lines 5-6).  Default: two calls of G.
  virtual void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                          Vector* gy1, Vector* gy2);

  // The three gradients of one F2OBO inner iteration (Alg. 1 lines 5-6):
  // grad_y g at z and at y on `inner`, grad_y f at y on `upper`.  Default:
  // GradYGPair then F.  A family whose evaluations each cost a round trip
  // (the oracle family) asks for the three at once.
  virtual void InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y,
                                   const BatchView& upper, const BatchView& inner, Vector* gz,
                                   Vector* gy_g, Vector* gy_f);
  // One inner iteration's z-gradient gz = grad_y g(x, z) and the y-update's
  // direction d = grad_y f(x, y) + lambda grad_y g(x, y) (Alg. 1 lines
  // 5-6): the penalty methods read grad_y f and grad_y g only through d.
  // Default: InnerIterationGrads, then d = gy_f + lambda gy_g (gy_g is
  // scratch).  The oracle family asks its client for d as one vector.
  virtual void InnerIterationDirection(const VecIn& x, const VecIn& z, const VecIn& y,
                                       double lambda, const BatchView& upper,
                                       const BatchView& inner, Vector* gz, Vector* gy_g,
                                       Vector* d);
  // The hypergradient's gradients (below) with grad_y f and grad_y g read
  // only as gy_l = grad_y L = grad_y f + lambda grad_y g (the residual of
  // the y-loop).  Default: HypergradientGrads, then the sum (gy_g scratch).
  virtual void HypergradientDirection(const VecIn& x, const VecIn& y, const VecIn& z,
                                      double lambda, const BatchView& upper,
                                      const BatchView& inner, Vector* gx_f, Vector* gy_l,
                                      Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z, Vector* gz);
  // The six gradients of the penalty hypergradient (Alg. 1 line 9): grad_x
  // and grad_y of f at y, of g at y and of g at z.  Default: F, G, G.
  virtual void HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z,
                                  const BatchView& upper, const BatchView& inner, Vector* gx_f,
                                  Vector* gy_f, Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z,
                                  Vector* gz);

  // Whether the HVPs below (and so the default EstimateSmoothness) can be
  // asked.  False for the oracle family, whose client answers values and
  // first derivatives only: algorithms that need more are refused at create.
  virtual bool has_hvp() const { return true; }
  // OK unless an evaluation of this round failed.  Only a family whose
  // values come from outside (the oracle family: the client went silent,
  // away, or answered badly) can fail; its failed evaluations write NaN and
  // later ones fail at once, and the round that asked must be discarded
  // with this status (it says why better than the NaN it left).  Prepare
  // with a new step's data clears it (the tasks of one multi-task step
  // share the step's oracle, and its failure).
  virtual absl::Status RoundFailure() const { return absl::OkStatus(); }

  // out = grad2_yy g(x, y) v        (y_dim)
  virtual void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
                      Vector* out) = 0;
  // out = grad2_xy g(x, y) v        (x_dim); the d1 x d2 cross block times v
  virtual void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
                      Vector* out) = 0;
  // out = grad2_yy f(x, y) v        (y_dim)
  virtual void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
                      Vector* out) = 0;

  // The start x_1 of a session that gives no initial point, before the
  // projection onto X (default: 0).
  virtual void DefaultX(Vector* x) const { x->setZero(); }

  // Fraction of upper rows classified correctly at (x, y); nullopt for
  // regression families.
  virtual std::optional<double> Accuracy(const VecIn& /*x*/, const VecIn& /*y*/,
                                         const BatchView& /*upper*/) {
    return std::nullopt;
  }

  // Smoothness constants at (x, y) on these batches.  Default: power iteration
  // with HVPs (90 HVPs, scaled up by a safety factor): several rounds' worth
  // of work, so families whose Hessians have a cheap bound override it.
  virtual Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data);
};

}  // namespace f2obo

#endif  // F2OBO_CORE_FAMILY_H_
