// A per-task loss temperature on logistic_hpo (paper App. E.2: task i's loss
// is log(1 + exp(-y (w^T a + w_0) / sigma_i))).  With logits z = W^T a + b
// linear in y, the tempered pair is the base family at a rescaled point:
//   f_sigma(x, y) = CE(z(y) / sigma)                       = f_b(s^2 x, y / s)
//   g_sigma(x, y) = CE(z(y) / sigma) + (mu_0/2)||y||^2 + (1/2) sum_f x_f ||W_f||^2
//                 = g_b(s^2 x, y / s)                      (s = sigma)
// where (f_b, g_b) is logistic_hpo built with mu_0 sigma^2: its regularizer
// (mu_0 sigma^2 / 2)||y/sigma||^2 + (1/2) sum sigma^2 x_f ||W_f / sigma||^2
// is the untempered one.  So the temperature scales the cross-entropy only
// (strong convexity mu_0 + min x_f is unchanged, and so is the constraint
// check), and every derivative follows by the chain rule:
//   grad_x = s^2 grad_x b,  grad_y = grad_y b / s,  grad2_yy = grad2_yy b / s^2,
//   grad2_xy v = s grad2_xy b v   (all of b at (s^2 x, y / s)).
// Scratch for the rescaled points is sized at construction.
#ifndef F2OBO_CORE_MULTITASK_TEMPERED_FAMILY_H_
#define F2OBO_CORE_MULTITASK_TEMPERED_FAMILY_H_

#include <memory>
#include <string_view>

#include "core/bilevel/bilevel_family.h"

namespace f2obo {

class TemperedFamily final : public BilevelFamily {
 public:
  // `base`: logistic_hpo built with mu0 sigma^2 (see above); sigma > 0.
  TemperedFamily(std::unique_ptr<BilevelFamily> base, double sigma);

  double sigma() const { return sigma_; }
  std::string_view name() const override { return base_->name(); }
  int x_dim() const override { return base_->x_dim(); }
  int y_dim() const override { return base_->y_dim(); }
  bool is_classification() const override { return base_->is_classification(); }
  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override {
    return base_->ValidateBatch(batch, role);
  }
  void Prepare(const StepData& data) override { base_->Prepare(data); }

  double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx, Vector* gy) override;
  double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy) override;
  void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                  Vector* gy1, Vector* gy2) override;
  // The rounds' gradients through the base family's own (logistic_hpo
  // computes them without the values nobody reads): the defaults' F, G and
  // GradYGPair calls above give the same bits, at the cost of a CE log per
  // row and the regularizer's norms.
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
  void DefaultX(Vector* x) const override { base_->DefaultX(x); }
  // The base family's constants at the rescaled point, over sigma^2.
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;
  std::optional<double> Accuracy(const VecIn& x, const VecIn& y, const BatchView& upper) override;

 private:
  // xs_ = sigma^2 x, ys_ = y / sigma.
  void Rescale(const VecIn& x, const VecIn& y);

  std::unique_ptr<BilevelFamily> base_;
  double sigma_, inv_sigma_, sigma2_;
  Vector xs_, ys_, ys2_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_MULTITASK_TEMPERED_FAMILY_H_
