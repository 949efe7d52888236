// The feasible set (X of the bilevel class, Z of the simple bilevel class):
// its Euclidean projection P, its linear minimization oracle (LMO) for the
// Frank-Wolfe methods (IR-SCG / IR-FSCG), and the projection onto the set cut
// by a halfspace (AGM-BiO's X_k).
#ifndef F2OBO_CORE_CONSTRAINT_H_
#define F2OBO_CORE_CONSTRAINT_H_

#include "absl/status/status.h"
#include "core/types.h"

namespace f2obo {

struct ConstraintSet {
  enum class Kind { kNone, kBox, kBall, kL1Ball, kSimplex };
  Kind kind = Kind::kNone;
  // Box: lo <= x <= hi coordinate-wise.  Size 1 means a scalar bound for
  // every coordinate; otherwise the size must equal x_dim.  Bounds may be
  // infinite: the non-negative orthant R^n_+ is Box(0, +inf).
  Vector lo;
  Vector hi;
  // Ball: ||x - center||_2 <= radius; L1Ball: ||x - center||_1 <= radius;
  // empty center means the origin.  Simplex: {x >= 0, sum_i x_i = radius}
  // (radius is the simplex's total; center unused).
  double radius = 0.0;
  Vector center;

  static ConstraintSet None() { return {}; }
  static ConstraintSet Box(double lo, double hi);
  static ConstraintSet Ball(double radius);
  static ConstraintSet L1Ball(double radius);
  static ConstraintSet Simplex(double total = 1.0);

  // Checks shapes against x_dim, lo <= hi, radius > 0, finiteness;
  // INVALID_ARGUMENT naming the field ("constraint.l1_ball.radius: ...").
  absl::Status Validate(int x_dim) const;
  // A lower bound on coordinate i over the set: the box's lo, 0 on the
  // simplex, center_i - radius on the l1 ball; -inf otherwise (kNone, and the
  // l2 ball, where it is left loose as it always was).
  double LowerBound(int i) const;
  // A bound on max_i |x_i| over the set: the box's largest |bound|, the
  // balls' radius plus their center's largest |entry|, the simplex's total;
  // +inf for kNone and a box with an infinite bound.
  double MaxAbsCoordinate() const;
  // In-place Euclidean projection onto the set.  Box and l2 ball: O(d), no
  // allocation.  L1 ball and simplex: exact, by sorting (Duchi et al. 2008,
  // Fig. 1; Condat 2016, Alg. 1), O(d log d), with a per-thread scratch
  // buffer that allocates only when a thread first sees a larger d.  A
  // non-finite input (or an l1 norm beyond DBL_MAX) gives NaN entries there.
  void Project(Vector* x) const;
  // Membership up to `tol` (absolute).  The l1 ball and the simplex also
  // allow the rounding of their sums (2 d eps radius), so a projected point
  // is contained with tol = 0.
  bool Contains(const VecIn& x, double tol = 0.0) const;
  // Contains up to rounding, tol = 1e-9 (1 + max_i |x_i|): for a point a
  // session computed (a projection or a convex combination of points of
  // the set may sit outside by a few ulps of its magnitude), e.g. the x of
  // a restored state.
  bool ContainsComputed(const VecIn& x) const {
    const double scale = 1.0 + (x.size() > 0 ? x.cwiseAbs().maxCoeff() : 0.0);
    return Contains(x, 1e-9 * scale);
  }

  // Whether Lmo is available: the l2 ball, the l1 ball, the simplex, and a
  // box whose bounds are all finite (the compact sets).
  bool HasLmo() const;
  // s = argmin_{s in Z} <c, s> (s resized to c.size()).  O(d), no allocation
  // beyond s.  Ties go to the lowest index.  Closed forms:
  //   l2 ball: center - r c/||c|| (center if c = 0);
  //   l1 ball: center - r sign(c_i) e_i, i = argmax |c_i|;
  //   simplex: total e_i, i = argmin c_i;
  //   box: lo_i where c_i >= 0, hi_i where c_i < 0.
  // Requires HasLmo(); otherwise s is filled with NaN.
  void Lmo(const VecIn& c, Vector* s) const;
  // min_{z in Z} <a, z>, possibly -inf (unbounded sets), 0 when a = 0.
  double MinLinear(const VecIn& a) const;

  // Euclidean projection of *x onto Z ∩ {z : <a, z> <= b} (AGM-BiO's
  // cutting-plane set X_k, its Eq. (7)), in place.  The paper uses Dykstra's
  // algorithm on R^n_+; here the projection is exact up to rounding.  Method:
  //  * the cut is scaled by 1/||a||_inf (same set, better conditioned);
  //  * empty set (min_{z in Z} <a, z> > b, up to a relative 1e-12, by
  //    MinLinear): FAILED_PRECONDITION "cutting plane: Z ∩ {<a,z> <= b} is
  //    empty (min <a,z> over Z = m, b = b)"; a = 0 with b >= 0 is P_Z(x);
  //  * kNone: closed form x - max(0, <a,x> - b)/||a||^2 a;
  //  * l2 ball: closed form: P_ball(x) if it satisfies the cut; else the
  //    halfspace projection if it lies in the ball; else the nearest point of
  //    the (d-2)-sphere where the sphere meets the hyperplane <a,z> = b;
  //  * box, l1 ball, simplex: if <a, P_Z(x)> <= b that is the answer
  //    (bit-equal to Project(x)); otherwise (Lagrangian of the halfspace
  //    constraint) the answer is P_Z(x - mu a) for the mu > 0 with
  //    phi(mu) = <a, P_Z(x - mu a)> = b.  phi is non-increasing and piecewise
  //    linear (P_Z is affine on each active set), so mu is found by Newton
  //    steps on the exact slope of the current piece (a step from the root's
  //    piece lands on the root), safeguarded by a bracket: doubling from
  //    mu0 = (phi(0) - b)/||a||^2 (a lower end, as phi(mu) >= phi(0) -
  //    mu ||a||^2) until phi <= b, false position when a step leaves the
  //    bracket, bisection when two steps did not halve it; it stops when the
  //    root is within a relative 1e-13 of mu or phi is b up to the rounding
  //    of its terms: at most 300 + 1100 evaluations, typically 2-10 (5-7 at
  //    d = 100,000 on the l1 ball).
  //    Each evaluation is O(d): the l1 ball's and the simplex's threshold by
  //    Condat's (2016) sort-free algorithm.  The point at the upper end of
  //    the bracket is returned, so <a, z> <= b holds as evaluated.  If phi
  //    never reaches b (a set touching the hyperplane, up to rounding) the
  //    point reached is returned when <a, z> - b is within rounding, else
  //    the set is reported empty.
  // INVALID_ARGUMENT if a and x differ in size or a, b are not finite.
  // Allocates O(d) temporaries.
  absl::Status ProjectOntoCut(const VecIn& a, double b, Vector* x) const;
};

// Gradient mapping G_X(x, g, gamma) = (x - P_X(x - gamma g)) / gamma,
// paper Eq. (3).  `out` is caller-owned, sized x_dim.
void GradientMapping(const ConstraintSet& set, const VecIn& x, const VecIn& g, double gamma,
                     Vector* out);

}  // namespace f2obo

#endif  // F2OBO_CORE_CONSTRAINT_H_
