// The Euclidean projections SVRB and RSVRB apply to their matrix
// estimators (Guo & Yang, Alg. 1 line 4; core/bilevel/algorithms/svrb.cc
// has the round): S^u_C(J) = U diag(min(sigma, C)) V^T onto {||J||_2 <= C},
// and S^l_lambda(H) = Q diag(max(l, lambda)) Q^T of the symmetric part onto
// {H symmetric, H >= lambda I}, with H^{-1} w applied through the same
// eigendecomposition.
#ifndef F2OBO_CORE_HYPERGRADIENTS_SPECTRAL_PROJECTIONS_H_
#define F2OBO_CORE_HYPERGRADIENTS_SPECTRAL_PROJECTIONS_H_

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

#include "core/types.h"

namespace f2obo {

// S^u_C(J) = U diag(min(sigma_i, C)) V^T for the SVD J = U diag(sigma) V^T:
// singular values above C are clipped to C, the others are kept.  C > 0.
Matrix ClipSingularValues(const Matrix& j, double c);

// S^l_lambda(H) = Q diag(max(l_i, lambda)) Q^T for the eigendecomposition
// (H + H^T)/2 = Q diag(l) Q^T: eigenvalues below lambda are raised to lambda,
// the others are kept.  H square, lambda > 0.
Matrix RaiseEigenvalues(const Matrix& h, double lambda);

// The two projections in place, with decompositions sized once (no heap
// allocation per call after construction), for rounds of a d1 x d2 J and
// a d2 x d2 H.
class SpectralProjections {
 public:
  SpectralProjections(int d1, int d2);

  // j <- S^u_C(j), computed as j - sum_{sigma_i > C} (sigma_i - C) u_i v_i^T
  // so that j is returned bit-for-bit when no singular value exceeds C.
  // Returns the number of clipped singular values, or -1 if the SVD failed
  // (non-finite input).
  int ClipSingularValues(Eigen::Ref<Matrix> j, double c);

  // h <- S^l_lambda(h), computed as (h + h^T)/2 + sum_{l_i < lambda}
  // (lambda - l_i) q_i q_i^T, keeping the eigenpairs for Solve.  Returns
  // the number of raised eigenvalues, or -1 if the eigensolver failed.
  int RaiseEigenvalues(Eigen::Ref<Matrix> h, double lambda);

  // out = S^l_lambda(h)^{-1} w = Q diag(1 / max(l_i, lambda)) Q^T w for the
  // h and lambda of the last RaiseEigenvalues call.
  void Solve(const VecIn& w, Vector* out);

 private:
  Eigen::JacobiSVD<Matrix> svd_;
  Eigen::SelfAdjointEigenSolver<Matrix> eig_;
  Matrix sym_;     // (h + h^T)/2
  Vector raised_;  // max(l_i, lambda)
  Vector tmp_;     // Q^T w
};

}  // namespace f2obo

#endif  // F2OBO_CORE_HYPERGRADIENTS_SPECTRAL_PROJECTIONS_H_
