// The pieces of SVRB's round that its multi-task form RSVRB reuses (Guo &
// Yang, Alg. 1 lines 3-8 and Alg. 2 lines 4-9): the explicit derivatives of
// one point on one pair of draws, the STORM update of the five estimators
// (and its randomized-coordinate form, RC-STORM, which scales the sampled
// task's derivatives by 1/p_i), and the projections plus the hypergradient
// estimate h = u - J H^{-1} w.  svrb.cc and core/multitask/rsvrb.cc call
// the same code, so that RSVRB with one task is SVRB bit for bit.
//
// Names follow svrb.cc, not the paper: u = grad_x f, w = grad_y f (the
// paper's v), v = grad_y g (the paper's w), J = grad2_xy g (V), H = grad2_yy g.
#ifndef F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SVRB_ESTIMATORS_H_
#define F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SVRB_ESTIMATORS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "core/batch.h"
#include "core/bilevel/bilevel_family.h"
#include "core/hypergradients/spectral_projections.h"
#include "core/types.h"

namespace f2obo {

// The derivatives of one point on one pair of draws, sized once.
struct SvrbDerivatives {
  SvrbDerivatives(int d1, int d2) : gx_f(d1), gy_f(d2), gy_g(d2), jxy(d1, d2), hyy(d2, d2) {}
  Vector gx_f, gy_f, gy_g;
  Matrix jxy;  // grad2_xy g (d1 x d2)
  Matrix hyy;  // grad2_yy g (d2 x d2)
};

// Computes SvrbDerivatives from a family: f on xi, g on zeta, and the
// matrices column by column from HVPs on zeta (column j of grad2_xy g is
// HvpXYG(e_j), of grad2_yy g is HvpYYG(e_j): 2 d2 HVP passes).  Scratch is
// sized once.
class SvrbOracle {
 public:
  SvrbOracle(int d1, int d2) : d2_(d2), e_(Vector::Zero(d2)), col_x_(d1), col_y_(d2) {}
  // Returns the rows read.
  int64_t Evaluate(BilevelFamily& family, const VecIn& x, const VecIn& y, const BatchView& xi,
                   const BatchView& zeta, SvrbDerivatives* out);

 private:
  int d2_;
  Vector e_, col_x_, col_y_;
};

// The five estimators of one task, viewing its stored vectors (J and H
// column-major in vectors of d1 d2 and d2 d2 entries).
struct SvrbEstimators {
  SvrbEstimators(Vector& u_, Vector& w_, Vector& v_, Vector& j_, Vector& h_, int d1, int d2)
      : u(u_), w(w_), v(v_), j(j_.data(), d1, d2), h(h_.data(), d2, d2) {}
  Vector& u;
  Vector& w;
  Vector& v;
  Eigen::Map<Matrix> j;
  Eigen::Map<Matrix> h;
};

// Every estimator <- its derivative at the current point (a task's first
// round; SVRB's t = 1).
void SvrbStart(const SvrbDerivatives& cur, SvrbEstimators* e);

// STORM (Cutkosky & Orabona), both derivatives on the same draws:
//   e <- scale cur + keep (e - scale prev),   keep = 1 - a.
// scale = 1 is SVRB (Alg. 1 lines 3-7); scale = 1/p_i is RSVRB's
// randomized-coordinate STORM for the sampled task (Alg. 2 lines 4-8).  With
// scale = 1 the arithmetic is exactly SVRB's e -= prev; e *= keep; e += cur.
void SvrbStorm(const SvrbDerivatives& cur, const SvrbDerivatives& prev, double keep, double scale,
               SvrbEstimators* e);

// Scratch of SvrbProjectAndCombine, sized once.
struct SvrbCombineWorkspace {
  SvrbCombineWorkspace(int d1, int d2) : proj(d1, d2), hinv_w(d2), jh(d1) {}
  SpectralProjections proj;
  Vector hinv_w, jh;
};

// The projections, then the hypergradient estimate (Alg. 1 line 8, Alg. 2
// line 9):
//   u <- Pi_{||u|| <= fx_clip}(u)   (Alg. 2 line 4; inf: none, as Alg. 1)
//   w <- Pi_{||w|| <= fy_clip}(w)   (Alg. 1 line 4, Alg. 2 line 5)
//   J <- S^u_{jacobian_clip}(J),  H <- S^l_{hessian_floor}(H)   (lines 5-6)
//   h = u - J H^{-1} w
// The estimators are stored projected.  INVALID_ARGUMENT "<who>: ..." when
// an estimate is not finite (the SVD or eigensolver cannot run).
absl::Status SvrbProjectAndCombine(double fx_clip, double fy_clip, double jacobian_clip,
                                   double hessian_floor, const char* who, SvrbEstimators* e,
                                   SvrbCombineWorkspace* ws, Vector* h);

// SVRB and RSVRB build explicit grad2_xy g (x_dim x y_dim) and grad2_yy g
// (y_dim x y_dim) matrices (per touched task for RSVRB): INVALID_ARGUMENT
// naming options.max_explicit_dim when a dimension exceeds it.  `per`
// qualifies the memory ("" or " per task"), `instead` names the
// Hessian-free algorithm to use.
absl::Status CheckExplicitDims(const char* algorithm, int max_explicit_dim, int x_dim, int y_dim,
                               const char* per, const char* instead);

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_HYPERGRADIENTS_SVRB_ESTIMATORS_H_
