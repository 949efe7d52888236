// `ridge_hpo`: per-feature ridge penalties tuned on validation (SPEC 4.2).
//
//   g(x, y) = (1/2n) sum_{i in inner} (a_i^T y - b_i)^2
//             + (1/2) sum_j (x_j + mu_0) y_j^2
//   f(x, y) = (1/2m) sum_{i in upper} (a_i^T y - b_i)^2
//
// Layout: x in R^d (one penalty per feature), y in R^d (the weights).
// Batches: dense or CSR features (d columns) and `targets` b.
// g is (min_j x_j + mu_0)-strongly convex in y, so X must be a box whose
// lower bounds exceed -mu_0 (checked by ValidateConstraint).
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_RIDGE_HPO_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_RIDGE_HPO_H_

#include <memory>

#include "core/bilevel/bilevel_family.h"

namespace f2obo {

class RidgeHpoFamily final : public BilevelFamily {
 public:
  static absl::StatusOr<std::unique_ptr<BilevelFamily>> Create(const FamilyConfig& config);

  std::string_view name() const override { return "ridge_hpo"; }
  int x_dim() const override { return d_; }
  int y_dim() const override { return d_; }

  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override;
  absl::Status ValidateConstraint(const ConstraintSet& set) const override;
  void Prepare(const StepData&) override {}

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

  // Bounds from the batches (SmoothnessSource::kBatchBound, gram_bound.h):
  // see ridge_hpo.cc.
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;

 private:
  RidgeHpoFamily(int d, double mu0) : d_(d), mu0_(mu0) {}
  // Mean squared-residual loss (1/2n) sum (a_i^T y - b_i)^2 and, if gy is
  // given, its gradient (1/n) sum (a_i^T y - b_i) a_i written into gy.
  static double LeastSquares(const VecIn& y, const BatchView& view, Vector* gy);
  // out = (1/n) sum a_i a_i^T v
  static void Gram(const BatchView& view, const VecIn& v, Vector* out);

  int d_;
  double mu0_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_RIDGE_HPO_H_
