// `loss_tuning`: parametric loss tuning for imbalanced data (SPEC section
// 4.4, paper Sec. 6.1).  The inner problem trains a linear softmax
// classifier on a logit-adjusted loss; the outer problem scores it with a
// class-balanced validation loss.
//
//   s_i  = W^T a_i + b                     (plain logits)
//   z_ij = gamma_j s_ij + Delta_j          (adjusted logits)
//   g(x, y) = (1/n) sum_{i in inner} CE(z_i, l_i) + (mu_0/2) ||y||^2
//   f(x, y) = (1/m) sum_{i in upper} u_{l_i} CE(s_i, l_i)     (grad_x f = 0)
//
// Layout: y = (W, b) exactly as in logistic_hpo (W d x C feature-major, then
// the C biases; y_dim = d*C + C); x = (gamma_1..gamma_C, Delta_1..Delta_C),
// x_dim = 2C.  Class weights: u_j = m / count_j with m the rows of the
// whole upper batch and count_j its rows of label j, so f on the whole
// batch is the sum over the classes present of their mean CE; an upper
// batch with non-empty `class_weights` (C finite entries >= 0) uses
// u_j = class_weights[j] instead.  The weights belong to the batch, not to
// the view: on a view of n of its rows (the mini-batches of SF2OBO, SOBBO,
// SOGD, SVRB, PZOBO-S) f is (1/n) sum over the view of u_{l_i} CE_i with
// the whole batch's u, so a uniform draw of rows gives an unbiased estimate
// of the full-batch f and of its derivatives (core/bilevel/bilevel_family.h).  Recounting
// the view's own rows instead made u depend on the draw: a class absent
// from the draw dropped out and a rare one was weighted by its count in
// the draw, which biased small mini-batches towards the frequent classes.
// Prepare() counts the labels of its upper batch once per step; a view of
// any other batch counts that batch on the call.
// The inner batch's `class_weights` are ignored.
//
// Derivatives (p_i = softmax(z_i), r_i = p_i - e_{l_i}, ds_i = V^T a_i + v_b,
// Hz_i = (diag(p_i) - p_i p_i^T)(gamma . ds_i)):
//   grad_y g = (1/n) sum back-projection of gamma . r_i, + mu_0 y
//   d g/d gamma_j = (1/n) sum r_ij s_ij,   d g/d Delta_j = (1/n) sum r_ij
//   grad2_yy g v  = (1/n) sum back-projection of gamma . Hz_i, + mu_0 v
//   grad2_xy g v  = (1/n) sum (Hz_ij s_ij + r_ij ds_ij ; Hz_ij)
// g is mu_0-strongly convex in y for every x, so any constraint set is fine.
// Batches: dense or CSR features (d columns) and `labels` in [0, C).
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_LOSS_TUNING_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_LOSS_TUNING_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/bilevel/bilevel_family.h"

namespace f2obo {

class LossTuningFamily final : public BilevelFamily {
 public:
  static absl::StatusOr<std::unique_ptr<BilevelFamily>> Create(const FamilyConfig& config);

  std::string_view name() const override { return "loss_tuning"; }
  int x_dim() const override { return 2 * c_; }
  // gamma = 1, Delta = 0: the plain logits (x = 0 would scale every logit
  // to 0, a degenerate start with a zero gradient in the weights).
  void DefaultX(Vector* x) const override {
    x->setZero();
    x->head(c_).setOnes();
  }
  int y_dim() const override { return d_ * c_ + c_; }
  bool is_classification() const override { return true; }

  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override;
  // Counts the upper batch's labels (the class weights of every view of it).
  // Scratch is C-sized and allocated at construction.
  void Prepare(const StepData& data) override;

  double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx, Vector* gy) override;
  double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy) override;
  void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                  Vector* gy1, Vector* gy2) override;
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
              Vector* out) override;
  std::optional<double> Accuracy(const VecIn& x, const VecIn& y, const BatchView& upper) override;

  // Bounds from the batches (SmoothnessSource::kBatchBound), one forward
  // pass over each: see loss_tuning.cc.
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;

 private:
  LossTuningFamily(int d, int c, double mu0)
      : d_(d),
        c_(c),
        mu0_(mu0),
        s_(c),
        z_(c),
        s2_(c),
        z2_(c),
        ds_(c),
        coef_(c),
        counts_(c),
        prepared_counts_(c) {}
  // coef_[j] = u_j / n for a view of n rows, u_j from the view's whole
  // batch (see the header comment).
  void ClassCoefficients(const BatchView& view);
  // Adjusted logits z = gamma . s + Delta into z from the plain logits s.
  void Adjust(const VecIn& x, const double* s, double* z) const;

  int d_, c_;
  double mu0_;
  Vector s_, z_, s2_, z2_, ds_, coef_;  // C-sized scratch
  Vector weights_;                      // per-row curvature bounds
  std::vector<int> counts_;             // C-sized scratch
  // Label counts of the upper batch Prepare() saw, and that batch (its
  // address and label storage, so that another batch is never mistaken
  // for it).
  std::vector<int> prepared_counts_;
  const Batch* prepared_ = nullptr;
  const int32_t* prepared_labels_ = nullptr;
  size_t prepared_rows_ = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_LOSS_TUNING_H_
