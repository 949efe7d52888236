// The oracle family: f_t and g_t are the client's (a PyTorch model, any
// differentiable code); their values and first derivatives come from an
// Oracle (core/oracle.h) that the step's batches carry, and the step's data
// never leaves the client.  The spec gives only the dimensions (family.x_dim,
// family.y_dim) and the initial point; the session's state, RNG and
// algorithm stay on the server as for any family.
//
// What it answers: values, grad_x and grad_y of f (upper batch) and g
// (inner batch), on every row or on rows the server names (SF2OBO's
// mini-batches).  What it does not: HVPs, so no second-order baseline, no
// automatic step size (a smoothness estimate) and no exact metrics (the
// true hypergradient needs HVPs); has_hvp() is false and sessions asking
// for them are refused at create (core/bilevel/bilevel_problem.cc).
// Queries of one family call go to the oracle together (one round trip):
// F2OBO's inner iteration is one, its hypergradient another.  A query
// carries the task of the batch it is on (Batch::oracle_task), so one
// instance serves every task of the multi-task "multitask_oracle"
// (core/multitask/multitask_family.cc); a failure stays the step's until
// a batch with another oracle (a new step) comes (core/oracle.h,
// OracleCalls), whichever task the round evaluates next.
// g must be strongly convex in y as for any family; the server cannot check
// it, the client's model is its own responsibility.
#ifndef F2OBO_CORE_BILEVEL_FAMILIES_ORACLE_FAMILY_H_
#define F2OBO_CORE_BILEVEL_FAMILIES_ORACLE_FAMILY_H_

#include <array>
#include <memory>

#include "absl/types/span.h"
#include "core/bilevel/bilevel_family.h"
#include "core/oracle.h"

namespace f2obo {

class OracleFamily final : public BilevelFamily {
 public:
  // The registry name ("oracle").
  static constexpr const char* kName = "oracle";
  static absl::StatusOr<std::unique_ptr<BilevelFamily>> Create(const FamilyConfig& config);

  std::string_view name() const override { return kName; }
  int x_dim() const override { return d1_; }
  int y_dim() const override { return d2_; }
  bool has_hvp() const override { return false; }
  absl::Status RoundFailure() const override { return calls_.failure(); }

  // Refuses a batch without an oracle (a unary Step to an oracle session)
  // or without rows.
  absl::Status ValidateBatch(const Batch& batch, BatchRole role) const override;
  void Prepare(const StepData& data) override;

  double F(const VecIn& x, const VecIn& y, const BatchView& upper, Vector* gx, Vector* gy) override;
  double G(const VecIn& x, const VecIn& y, const BatchView& inner, Vector* gx, Vector* gy) override;
  void GradYGPair(const VecIn& x, const VecIn& y1, const VecIn& y2, const BatchView& inner,
                  Vector* gy1, Vector* gy2) override;
  void InnerIterationGrads(const VecIn& x, const VecIn& z, const VecIn& y, const BatchView& upper,
                           const BatchView& inner, Vector* gz, Vector* gy_g, Vector* gy_f) override;
  void InnerIterationDirection(const VecIn& x, const VecIn& z, const VecIn& y, double lambda,
                               const BatchView& upper, const BatchView& inner, Vector* gz,
                               Vector* gy_g, Vector* d) override;
  void HypergradientDirection(const VecIn& x, const VecIn& y, const VecIn& z, double lambda,
                              const BatchView& upper, const BatchView& inner, Vector* gx_f,
                              Vector* gy_l, Vector* gx_g_y, Vector* gy_g, Vector* gx_g_z,
                              Vector* gz) override;
  void HypergradientGrads(const VecIn& x, const VecIn& y, const VecIn& z, const BatchView& upper,
                          const BatchView& inner, Vector* gx_f, Vector* gy_f, Vector* gx_g_y,
                          Vector* gy_g, Vector* gx_g_z, Vector* gz) override;

  // Never asked (has_hvp() is false); they fail the round if they are.
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& inner, const VecIn& v,
              Vector* out) override;
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& upper, const VecIn& v,
              Vector* out) override;
  Smoothness EstimateSmoothness(const VecIn& x, const VecIn& y, const StepData& data) override;

 private:
  OracleFamily(int d1, int d2) : d1_(d1), d2_(d2) {}
  static OracleQuery Query(OracleQuery::Function fn, const VecIn& x, const VecIn& y,
                           const BatchView& view);
  // A hypergradient's three queries, g at z first (HypergradientDirection
  // says why): g(x, z) into gx_g_z and gz, f(x, y) into gx_f and gy_f,
  // g(x, y) into gx_g_y (its grad_y left to the caller).
  static std::array<OracleQuery, 3> HypergradientQueries(const VecIn& x, const VecIn& y,
                                                         const VecIn& z, const BatchView& upper,
                                                         const BatchView& inner, Vector* gx_f,
                                                         Vector* gy_f, Vector* gx_g_y,
                                                         Vector* gx_g_z, Vector* gz);
  void Unsupported(const char* what, Vector* out);

  const int d1_, d2_;
  OracleCalls calls_;  // the step's oracle (Prepare) and its failure
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_FAMILIES_ORACLE_FAMILY_H_
