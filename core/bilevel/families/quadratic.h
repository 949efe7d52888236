// `quadratic`: the exact family for tests and demos (SPEC section 4.1).
//
//   g_t(x, y) = (mu/2) ||y - (M_t x + c_t)||^2,   y*_t(x) = M_t x + c_t
//   f_t(x, y) = (1/2) ||y - d_t||^2               (least squares), or
//   f_t(x, y) = s exp(-||y||^2)                   (bump, bump_upper = true)
//
// Layout: x in R^d1, y in R^d2 (plain vectors).  The inner batch carries
// M_t (d2 x d1) and c_t (d2); the least-squares upper batch carries d_t (d2).
// Neither batch has sample rows, so SF2OBO's sampling is the identity here.
// The paper's Sec. 4.2 example is d1 = d2 = 1, M_t = (-1)^t, c_t = 0, bump f.
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_QUADRATIC_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_QUADRATIC_H_

#include <memory>

#include "core/bilevel/bilevel_family.h"

namespace f2obo {

class QuadraticFamily final : public BilevelFamily {
 public:
  static absl::StatusOr<std::unique_ptr<BilevelFamily>> Create(const FamilyConfig& config);

  std::string_view name() const override { return "quadratic"; }
  int x_dim() const override { return d1_; }
  int y_dim() const override { return d2_; }

  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override;
  void Prepare(const StepData& data) override;

  double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx, Vector* gy) override;
  double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy) override;
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
              Vector* out) override;
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;

 private:
  QuadraticFamily(int d1, int d2, double mu, bool bump, double scale)
      : d1_(d1), d2_(d2), mu_(mu), bump_(bump), scale_(scale), r_(d2), mxc_(d2), mxc_x_(d1) {}
  // r_ = y - (M x + c): the inner residual.
  void Residual(const VecIn& x, const VecIn& y, const Batch& inner);

  int d1_, d2_;
  double mu_;
  bool bump_;
  double scale_;
  Vector r_;  // scratch
  // M x + c of the last Residual, for that batch's M and c and that x: a
  // round evaluates g at one x a dozen times (K inner iterations, the
  // hypergradient), and recomputing the same product gives the same bits,
  // so it is computed once.  Prepare forgets it (the
  // family contract: batches reach G through Prepare, so a batch changed in
  // place at the same address is prepared again).
  Vector mxc_, mxc_x_;
  const double* mxc_m_ = nullptr;
  const double* mxc_c_ = nullptr;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_QUADRATIC_H_
