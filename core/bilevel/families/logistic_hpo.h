// `logistic_hpo`: per-feature L2 penalties of a multinomial logistic
// regression tuned on validation data (SPEC section 4.3, paper Sec. 6.2).
//
//   g(x, y) = (1/n) sum_{i in inner} CE(z_i, l_i) + (mu_0/2) ||y||^2
//             + (1/2) sum_{i=1..d} x_i ||W_i||^2
//   f(x, y) = (1/m) sum_{i in upper} CE(z_i, l_i)          (grad_x f = 0)
//
// with logits z_i = W^T a_i + b and CE the softmax cross-entropy.
// Layout: y = (W, b), W d x C stored feature-major (W_i = y[i*C .. i*C + C)),
// then the C biases (y[d*C + c]); y_dim = d*C + C.  x in R^d, one penalty per
// feature row of W; mu_0 applies to all of y including the biases.
//
// Derivatives (r_i = softmax(z_i) - e_{l_i}):
//   grad_y g = (1/n) sum (a_i r_i^T, r_i) + mu_0 y + (x_i W_i)_i
//   grad_x g = ((1/2) ||W_i||^2)_i
//   grad2_yy g v:  CE Hessian through dz_i = V^T a_i + v_b, + mu_0 v + x_i V_i
//   (grad2_xy g v)_i = W_i . V_i
// Batches: dense or CSR features (d columns) and `labels` in [0, C).
// g is (min_i x_i + mu_0)-strongly convex in y, so X must be a box whose
// lower bounds exceed -mu_0 (checked by ValidateConstraint); the paper uses
// [0, 0.1]^d.
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_LOGISTIC_HPO_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_LOGISTIC_HPO_H_

#include <memory>

#include "core/bilevel/bilevel_family.h"

namespace f2obo {

class LogisticHpoFamily final : public BilevelFamily {
 public:
  static absl::StatusOr<std::unique_ptr<BilevelFamily>> Create(const FamilyConfig& config);

  std::string_view name() const override { return "logistic_hpo"; }
  int x_dim() const override { return d_; }
  int y_dim() const override { return d_ * c_ + c_; }
  bool is_classification() const override { return true; }

  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override;
  absl::Status ValidateConstraint(const ConstraintSet& set) const override;
  // Sizes the dense passes' buffers for these batches (logistic_hpo_dense.cc).
  void Prepare(const StepData& data) override { PrepareDense(data); }

  double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx, Vector* gy) override;
  double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy) override;
  void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                  Vector* gy1, Vector* gy2) override;
  // The rounds' gradients without the values nobody reads (the CE's log
  // per row, the regularizer's norms): bit-equal to the defaults' F and G.
  void InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y, const BatchView& upper,
                           const BatchView& inner, Vector* gz, Vector* gy_g, Vector* gy_f) override;
  void HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z, const BatchView& upper,
                          const BatchView& inner, Vector* gx_f, Vector* gy_f, Vector* gx_g_y,
                          Vector* gy_g, Vector* gx_g_z, Vector* gz) override;
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
              Vector* out) override;
  std::optional<double> Accuracy(const VecIn& x, const VecIn& y, const BatchView& upper) override;

  // Bounds from the batches (SmoothnessSource::kBatchBound), one forward
  // pass over each: see logistic_hpo.cc.
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;

 private:
  LogisticHpoFamily(int d, int c, double mu0) : d_(d), c_(c), mu0_(mu0), z_(c), z2_(c), dz_(c) {
    ReserveDense();
  }
  // Sizes the dense buffers at construction: the pair's d x 2C, and logits
  // for batches of up to 256 rows (fewer for very many classes, at most 512
  // KB), so that most sessions' passes never allocate even without Prepare
  // (the pair only up to 2^20 entries).
  void ReserveDense();
  // Mean cross-entropy (1/n) sum CE(z_i, l_i) over the view and, if gy is
  // given, its gradient in y written into gy.  With value = false (and gy
  // given) only the gradient: returns 0.
  double CrossEntropy(const VecIn& y, const BatchView& view, Vector* gy, bool value = true);
  // grad_x g = ((1/2) ||W_f||^2)_f into gx (if given).
  void RowNorms(const VecIn& y, Vector* gx) const;
  // G's gradients without its value.
  void GradG(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy);
  // out = (1/n) sum of the CE Hessians at y applied to v (no regularizer).
  void CrossEntropyHvp(const VecIn& y, const BatchView& view, const VecIn& v, Vector* out);
  // A bound on ||(1/n) sum_i J_i^T H_i J_i|| over the view at y (softmax.h,
  // gram_bound.h).
  double CurvatureBound(const VecIn& y, const BatchView& view);
  // gy += mu_0 y + (x_i W_i)_i: the gradient (or, with y = v, the HVP) of
  // the regularizer.
  void AddRegularizer(const VecIn& x, const VecIn& y, Vector* gy) const;

  // Dense batches: blocked products over the batch (logistic_hpo_dense.cc).
  void PrepareDense(const StepData& data);
  // The view's rows as one n x d block (gathered into gathered_ for a subset).
  Eigen::Map<const RowMatrix> DenseRows(const BatchView& view);
  // The view's rows transposed (d x n), if Prepare transposed its batch
  // (small shapes, whole batches), else null.
  const double* TransposedRows(const BatchView& view) const;
  // Logits A W + 1 b^T (n x C) of the model y, in logits_; at: A^T or null.
  Eigen::Map<RowMatrix> DenseLogits(const Eigen::Map<const RowMatrix>& a, const double* at,
                                    const VecIn& y);
  // Logits of two models side by side (n x 2C) from one product with [W_1 W_2].
  Eigen::Map<RowMatrix> DenseLogitsPair(const Eigen::Map<const RowMatrix>& a, const double* at,
                                        const VecIn& y1, const VecIn& y2);
  // With ridge_x, the gradients include the regularizer's at that x (as
  // AddRegularizer after them would).
  double DenseCrossEntropy(const VecIn& y, const BatchView& view, Vector* gy, bool value,
                           const VecIn* ridge_x = nullptr);
  void DenseGradYGPair(const VecIn& y1, const VecIn& y2, const BatchView& inner, Vector* gy1,
                       Vector* gy2, const VecIn* ridge_x = nullptr);
  void DenseCrossEntropyHvp(const VecIn& y, const BatchView& view, const VecIn& v, Vector* out);

  int d_, c_;
  double mu0_;
  Vector logits_, wpair_, gathered_;  // dense passes' buffers (grown, never shrunk)
  Vector rows_scratch_;               // 2 n: the small shapes' row maxima and CE
  // Small shapes: A^T of the upper and inner batches Prepare saw (the
  // products A W then run across rows, small_gemm.h), each valid for the
  // batch at that address with that data until the next Prepare (batches
  // passed to F, G, ... were accepted by Prepare: family.h).
  Vector transposed_;
  struct Transposed {
    const Batch* batch = nullptr;
    const double* data = nullptr;
    int rows = 0;
    const double* at = nullptr;  // in transposed_
  } transposed_of_[2];
  Vector z_, z2_, dz_;  // C-sized per-row scratch
  Vector weights_;      // per-row curvature bounds (EstimateSmoothness)
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_LOGISTIC_HPO_H_
