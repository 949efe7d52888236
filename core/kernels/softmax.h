// Linear softmax classifier machinery shared by `logistic_hpo` and
// `loss_tuning` (SPEC sections 4.3 and 4.4).
//
// Model layout (both families): y = (W, b) with W d x C stored feature-major,
// i.e. W_i (the C weights of feature i) at y[i*C .. i*C + C), followed by the
// C biases at y[d*C .. d*C + C).  Logits of sample i:  z = W^T a_i + b.
//
// Softmax cross-entropy of logits z (C entries) with label l:
//   CE(z, l) = lse(z) - z_l,   grad_z = p - e_l,   Hess_z = diag(p) - p p^T,
// where p = softmax(z) and lse(z) = log sum_j exp(z_j).
//
// Everything works on caller-owned C-sized buffers and never allocates.
#ifndef F2OBO_CORE_KERNELS_SOFTMAX_H_
#define F2OBO_CORE_KERNELS_SOFTMAX_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/batch.h"
#include "core/family_config.h"
#include "core/features.h"

namespace f2obo {

// Config checks shared by the softmax families (d > 0, C >= 2, mu_0 > 0,
// and a parameter vector of (d + 1) C entries that fits an int).
inline absl::Status ValidateSoftmaxConfig(const FamilyConfig& config, const char* family) {
  if (config.features <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.features: ", family, " needs d > 0, got ", config.features));
  }
  if (config.classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("family.classes: ", family, " needs C >= 2, got ", config.classes));
  }
  // features + 1 is formed in int64: in int it overflows for d = INT_MAX and
  // the product wrapped negative, passing the check.
  if ((static_cast<int64_t>(config.features) + 1) * config.classes >
      static_cast<int64_t>(std::numeric_limits<int>::max())) {
    return absl::InvalidArgumentError(
        "family.features: (d + 1) * C does not fit the parameter vector");
  }
  if (!(config.mu0 > 0.0) || !std::isfinite(config.mu0)) {
    return absl::InvalidArgumentError("family.mu0: must be finite and > 0");
  }
  return absl::OkStatus();
}

// 1/n for a view of n rows (0 for an empty view, so its mean is 0, not NaN).
inline double InverseRows(const BatchView& view) {
  return view.rows.n > 0 ? 1.0 / view.rows.n : 0.0;
}

// Numerics of the helpers below, for logits of any magnitude:
//  * exp is only ever taken of z_j - max(z) <= 0, so it cannot overflow;
//  * the cross-entropy is formed as (max(z) - z_l) + log(sum_j exp(z_j - max)),
//    never as lse(z) - z_l: with |z| ~ 1e300, lse(z) rounds to max(z) and the
//    difference would lose the O(1) part entirely (e.g. 0 instead of log 2
//    for two tied logits).  The result is finite whenever max(z) - z_l is.
//  * logits that overflowed to +-inf (finite features times finite weights
//    can exceed DBL_MAX) have no meaningful softmax; the helpers then return
//    NaN and write NaN probabilities on purpose, so that the NaN reaches the
//    gradient and Session::Prepare refuses the round with the state
//    unchanged, instead of a plausible-looking number being used.

// Largest entry of z (c >= 1).
inline double MaxLogit(const double* z, int c) {
  double m = z[0];
  for (int j = 1; j < c; ++j) m = z[j] > m ? z[j] : m;
  return m;
}

// CE(z, l) = lse(z) - z_l without overwriting z.
inline double SoftmaxCrossEntropy(const double* z, int c, int l) {
  const double m = MaxLogit(z, c);
  if (!std::isfinite(m)) return std::numeric_limits<double>::quiet_NaN();
  double s = 0.0;
  for (int j = 0; j < c; ++j) s += std::exp(z[j] - m);
  return (m - z[l]) + std::log(s);
}

// Overwrites z with softmax(z); if l >= 0, returns CE(z, l) of the input
// (else 0).
inline double SoftmaxInPlace(double* z, int c, int l = -1) {
  const double m = MaxLogit(z, c);
  if (!std::isfinite(m)) {
    for (int j = 0; j < c; ++j) z[j] = std::numeric_limits<double>::quiet_NaN();
    return std::numeric_limits<double>::quiet_NaN();
  }
  const double gap = l >= 0 ? m - z[l] : 0.0;
  double s = 0.0;
  for (int j = 0; j < c; ++j) {
    z[j] = std::exp(z[j] - m);
    s += z[j];
  }
  // s >= 1 (the max contributes exp(0)), so the division is safe.
  const double inv = 1.0 / s;
  for (int j = 0; j < c; ++j) z[j] *= inv;
  return l >= 0 ? gap + std::log(s) : 0.0;
}

// CE Hessian-vector product in logit space: u = p . dz - p (p . dz), i.e.
// (diag(p) - p p^T) dz.  u may alias dz.
inline void SoftmaxHvp(const double* p, const double* dz, int c, double* u) {
  double pd = 0.0;
  for (int j = 0; j < c; ++j) pd += p[j] * dz[j];
  for (int j = 0; j < c; ++j) u[j] = p[j] * (dz[j] - pd);
}

// An upper bound on ||diag(p) - p p^T||, the CE Hessian in logit space, for
// probabilities p: it is below diag(p), so <= max_j p_j (tight at uniform
// p = 1/C), and by Gershgorin <= max_j 2 p_j (1 - p_j) <= 1/2 (tight-ish for
// confident rows).  NaN p gives NaN.
inline double SoftmaxCurvatureBound(const double* p, int c) {
  double max_p = 0.0, max_g = 0.0;
  for (int j = 0; j < c; ++j) {
    if (std::isnan(p[j])) return p[j];
    max_p = p[j] > max_p ? p[j] : max_p;
    const double g = 2.0 * p[j] * (1.0 - p[j]);
    max_g = g > max_g ? g : max_g;
  }
  return max_p < max_g ? max_p : max_g;
}

// Smoothness of softmax losses in the model y = (W, b) (layout above): row
// i's Hessian in y is J_i^T H_i J_i with J_i v = V^T a_i + v_b, so with
// ||H_i|| <= h_i, sum_i w_i J_i^T H_i J_i <= (sum_i w_i h_i a~_i a~_i^T) (x) I_C
// for a~_i = (a_i, 1), whose norm gram_bound.h bounds.

// Index of the largest entry; ties go to the lowest index.
inline int ArgMax(const double* z, int c) {
  int best = 0;
  for (int j = 1; j < c; ++j) {
    if (z[j] > z[best]) best = j;
  }
  return best;
}

// z = W^T a_i + b for the model y (layout above).
inline void Logits(const Batch& b, int i, const double* y, int d, int c, double* z) {
  RowTimesMatrix(b, i, y, c, z);
  const double* bias = y + static_cast<size_t>(d) * c;
  for (int j = 0; j < c; ++j) z[j] += bias[j];
}

// Logits of sample i under two models in one read of a_i.
inline void LogitsPair(const Batch& b, int i, const double* y1, const double* y2, int d, int c,
                       double* z1, double* z2) {
  const double* bias1 = y1 + static_cast<size_t>(d) * c;
  const double* bias2 = y2 + static_cast<size_t>(d) * c;
  for (int j = 0; j < c; ++j) {
    z1[j] = bias1[j];
    z2[j] = bias2[j];
  }
  auto add = [&](int feature, double a) {
    const size_t off = static_cast<size_t>(feature) * c;
    for (int j = 0; j < c; ++j) {
      z1[j] += a * y1[off + j];
      z2[j] += a * y2[off + j];
    }
  };
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    for (int k = begin; k < end; ++k) add(col[k], val[k]);
    return;
  }
  const double* row = b.dense.data() + static_cast<size_t>(i) * b.dense.cols();
  for (int f = 0; f < d; ++f) add(f, row[f]);
}

// Gradient back-projection of a logit-space vector r for sample i:
// G_W += a_i r^T and G_b += r, with g in the model layout.
inline void BackProject(const Batch& b, int i, const double* r, int d, int c, double* g) {
  RowOuterAdd(b, i, r, c, g);
  double* gb = g + static_cast<size_t>(d) * c;
  for (int j = 0; j < c; ++j) gb[j] += r[j];
}

// BackProject for two models in one read of a_i.
inline void BackProjectPair(const Batch& b, int i, const double* r1, const double* r2, int d, int c,
                            double* g1, double* g2) {
  auto add = [&](int feature, double a) {
    const size_t off = static_cast<size_t>(feature) * c;
    for (int j = 0; j < c; ++j) {
      g1[off + j] += a * r1[j];
      g2[off + j] += a * r2[j];
    }
  };
  if (b.sparse_features) {
    const int begin = b.csr.outerIndexPtr()[i], end = b.csr.outerIndexPtr()[i + 1];
    const int* col = b.csr.innerIndexPtr();
    const double* val = b.csr.valuePtr();
    for (int k = begin; k < end; ++k) add(col[k], val[k]);
  } else {
    const double* row = b.dense.data() + static_cast<size_t>(i) * b.dense.cols();
    for (int f = 0; f < d; ++f) add(f, row[f]);
  }
  add(d, 1.0);  // the biases follow W in the layout
}

}  // namespace f2obo

#endif  // F2OBO_CORE_KERNELS_SOFTMAX_H_
