#include "core/hypergradients/spectral_projections.h"

#include <algorithm>

namespace f2obo {

SpectralProjections::SpectralProjections(int d1, int d2)
    : svd_(d1, d2, Eigen::ComputeThinU | Eigen::ComputeThinV),
      eig_(d2),
      sym_(d2, d2),
      raised_(d2),
      tmp_(d2) {}

int SpectralProjections::ClipSingularValues(Eigen::Ref<Matrix> j, double c) {
  if (!j.allFinite()) return -1;
  svd_.compute(j);
  if (svd_.info() != Eigen::Success) return -1;
  const Vector& sigma = svd_.singularValues();
  int clipped = 0;
  for (Eigen::Index i = 0; i < sigma.size(); ++i) {
    if (sigma[i] <= c) continue;
    j.noalias() -= (sigma[i] - c) * svd_.matrixU().col(i) * svd_.matrixV().col(i).transpose();
    ++clipped;
  }
  return clipped;
}

int SpectralProjections::RaiseEigenvalues(Eigen::Ref<Matrix> h, double lambda) {
  if (!h.allFinite()) return -1;
  sym_ = h;
  sym_ += h.transpose();
  sym_ *= 0.5;
  eig_.compute(sym_, Eigen::ComputeEigenvectors);
  if (eig_.info() != Eigen::Success) return -1;
  const Vector& l = eig_.eigenvalues();
  int raised = 0;
  h = sym_;
  for (Eigen::Index i = 0; i < l.size(); ++i) {
    raised_[i] = std::max(l[i], lambda);
    if (l[i] >= lambda) continue;
    h.noalias() +=
        (lambda - l[i]) * eig_.eigenvectors().col(i) * eig_.eigenvectors().col(i).transpose();
    ++raised;
  }
  return raised;
}

void SpectralProjections::Solve(const VecIn& w, Vector* out) {
  tmp_.noalias() = eig_.eigenvectors().transpose() * w;
  tmp_.array() /= raised_.array();
  out->noalias() = eig_.eigenvectors() * tmp_;
}

Matrix ClipSingularValues(const Matrix& j, double c) {
  Matrix out = j;
  SpectralProjections p(static_cast<int>(j.rows()), static_cast<int>(j.cols()));
  p.ClipSingularValues(out, c);
  return out;
}

Matrix RaiseEigenvalues(const Matrix& h, double lambda) {
  Matrix out = h;
  SpectralProjections p(1, static_cast<int>(h.rows()));
  p.RaiseEigenvalues(out, lambda);
  return out;
}

}  // namespace f2obo
