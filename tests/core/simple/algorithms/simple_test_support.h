// Shared pieces of the simple bilevel algorithm tests: small dense
// families with closed forms, a state that drives an algorithm round by
// round (without a Session), the synthetic over-parameterized regression
// stream, and the log-log slope fit the rate tests use.
#ifndef F2OBO_TESTS_CORE_SIMPLE_ALGORITHMS_SIMPLE_TEST_SUPPORT_H_
#define F2OBO_TESTS_CORE_SIMPLE_ALGORITHMS_SIMPLE_TEST_SUPPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/rng.h"
#include "core/simple/simple_algorithm.h"

namespace f2obo::testing {

// A family of the class's registry (CreateSimpleFamily: least_squares,
// logistic, linear_inverse) held by value; fails the test if it cannot be
// built.  With B = 1^T, c = 1 on Z = R^d_+, linear_inverse's solution is
// x* = (1/d) 1, f* = 1/(2d), g* = 0, with L_f = 1, L_g = d.
class RegisteredFamily final : public SimpleFamily {
 public:
  RegisteredFamily(const std::string& name, int features, int classes = 0);
  std::string_view name() const override { return f_->name(); }
  int x_dim() const override { return f_->x_dim(); }
  bool is_classification() const override { return f_->is_classification(); }
  bool upper_reads_rows() const override { return f_->upper_reads_rows(); }
  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    return f_->ValidateBatch(b, role);
  }
  double F(const VecIn& x, const BatchView& v, Vector* grad) override { return f_->F(x, v, grad); }
  double G(const VecIn& x, const BatchView& v, Vector* grad) override { return f_->G(x, v, grad); }
  double SmoothnessF(const BatchView& v) override { return f_->SmoothnessF(v); }
  double SmoothnessG(const BatchView& v) override { return f_->SmoothnessG(v); }

 private:
  std::unique_ptr<SimpleFamily> f_;
};

// A dense batch of `rows` (rows x cols, row-major) with targets.
Batch DenseBatch(const Matrix& rows, const Vector& targets);
// The rows `idx` of (a, b).
Batch Rows(const Matrix& a, const Vector& b, const std::vector<int>& idx);

// The state a simple bilevel round reads and writes, without a Session:
// t, x, decision, rng, aux (InitialAux at t = 1).
struct SimpleRun {
  SimpleRun(const SimpleAlgorithm& algorithm, const Vector& x0, uint64_t seed);
  // One round; t advances when it succeeds.
  absl::Status Step(SimpleAlgorithm& algorithm, SimpleFamily& family, const StepData& data,
                    SimpleReport* report = nullptr);
  bool BitEquals(const SimpleRun& o) const;

  int64_t t = 1;
  Vector x;
  Vector decision;
  Rng rng;
  StateParts aux;
};

// Builds `name` from the class registry with its defaults (or the paper's
// setting) over `options` changes; fails the test if it cannot.
std::unique_ptr<SimpleAlgorithm> MakeAlgorithm(const std::string& name, const ConstraintSet& z,
                                               int x_dim, void (*adjust)(AlgorithmOptions*),
                                               bool upper_reads_rows = true);

// The synthetic over-parameterized regression: x_true sparse with
// ||x_true||_1 = 1, n_inner < features consistent inner rows (b = A x_true,
// so g* = 0 on Z when ||x*||_1 < radius), n_upper > features - n_inner
// noisy upper rows (so f restricted to argmin g is strongly convex and x*
// is unique).  f* = min f s.t. A_i x = b_i by its KKT system; the test
// checks ||x*||_1 is below the l1 radius it uses, so the ball is inactive.
struct OverParameterizedRegression {
  OverParameterizedRegression(int features, int n_inner, int n_upper, double noise, uint64_t seed);
  double FullF(const VecIn& x) const;  // f on every upper row
  double FullG(const VecIn& x) const;  // g on every inner row
  // Rows drawn uniformly with replacement (rng), `per_kind` of each.
  StepData DrawStep(int per_kind, Rng* rng) const;
  // Rows in cyclic order: step k gets upper rows [k u, k u + u) and inner
  // rows [k i, k i + i) modulo the pools.
  StepData CyclicStep(int64_t k, int upper_rows, int inner_rows) const;

  Matrix a_upper, a_inner;
  Vector b_upper, b_inner;
  Vector x_star;
  double f_star = 0.0;
};

// Least-squares slope of log(v) against log(t) over the points with
// t >= t_from (v > 0 required).
double LogLogSlope(const std::vector<double>& t, const std::vector<double>& v, double t_from);
// The suffix maximum e(t_j) = max_{l >= j} v(t_l): the smallest
// non-increasing upper envelope of v, what an O(t^-r) bound is compared
// with (a gap that dips through 0 on its way down has no meaningful slope
// of its own).
std::vector<double> SuffixMax(const std::vector<double>& v);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_CORE_SIMPLE_ALGORITHMS_SIMPLE_TEST_SUPPORT_H_
