// PZOBO / PZOBO-S (core/bilevel/algorithms/pzobo.cc): the perturbed-path difference
// delta = J_N u exactly for an inner problem quadratic in (x, y), over the
// full batch and over a shared mini-batch sequence, for any mu; the round's
// hypergradient from the regenerated directions; convergence; checkpoint
// continuation; transactional failure; options.
#include "core/bilevel/algorithms/pzobo.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::ConfigFor;
using testing::RandomVector;

// Test-only family, quadratic in (x, y) with a full (non-isotropic) Hessian:
// inner row i = [a_i (d2) | p_i (d1)] with target b_i,
//   g(x, y) = (1/n) sum_i (1/2) (a_i^T y - p_i^T x - b_i)^2 + (rho/2) ||y||^2,
// so on rows S: grad_y g = H_S y - B_S x - c_S with H_S = A_S^T A_S / n + rho I,
// B_S = A_S^T P_S / n, c_S = A_S^T b_S / n.  f(x, y) = (1/2) ||y - d||^2.
class LinearQuadraticFamily final : public BilevelFamily {
 public:
  LinearQuadraticFamily(int d1, int d2, double rho, Vector d)
      : d1_(d1), d2_(d2), rho_(rho), d_(std::move(d)) {}
  std::string_view name() const override { return "linear_quadratic_test"; }
  int x_dim() const override { return d1_; }
  int y_dim() const override { return d2_; }
  absl::Status ValidateBatch(const Batch&, BatchRole) const override { return absl::OkStatus(); }
  void Prepare(const StepData&) override {}
  double F(const VecIn&, const VecIn& y, const BatchView&, Vector* gx, Vector* gy) override {
    if (gx != nullptr) gx->setZero();
    if (gy != nullptr) *gy = y - d_;
    return 0.5 * (y - d_).squaredNorm();
  }
  double G(const VecIn& x, const VecIn& y, const BatchView& v, Vector* gx, Vector* gy) override {
    const Batch& b = *v.batch;
    double value = 0.5 * rho_ * y.squaredNorm();
    if (gx != nullptr) gx->setZero();
    if (gy != nullptr) *gy = rho_ * y;
    for (int k = 0; k < v.rows.n; ++k) {
      const int i = v.rows.row(k);
      const auto a = b.dense.row(i).head(d2_).transpose();
      const auto p = b.dense.row(i).tail(d1_).transpose();
      const double r = a.dot(y) - p.dot(x) - b.targets[i];
      value += 0.5 * r * r / v.rows.n;
      if (gx != nullptr) *gx -= (r / v.rows.n) * p;
      if (gy != nullptr) *gy += (r / v.rows.n) * a;
    }
    return value;
  }
  void HvpYYG(const VecIn&, const VecIn&, const BatchView& v, const VecIn& u,
              Vector* out) override {
    *out = rho_ * u;
    for (int k = 0; k < v.rows.n; ++k) {
      const auto a = v.batch->dense.row(v.rows.row(k)).head(d2_).transpose();
      *out += (a.dot(u) / v.rows.n) * a;
    }
  }
  void HvpXYG(const VecIn&, const VecIn&, const BatchView& v, const VecIn& u,
              Vector* out) override {
    out->setZero();
    for (int k = 0; k < v.rows.n; ++k) {
      const int i = v.rows.row(k);
      const auto a = v.batch->dense.row(i).head(d2_).transpose();
      const auto p = v.batch->dense.row(i).tail(d1_).transpose();
      *out -= (a.dot(u) / v.rows.n) * p;
    }
  }
  void HvpYYF(const VecIn&, const VecIn&, const BatchView&, const VecIn& u, Vector* out) override {
    *out = u;
  }

  // H_S and B_S of the rows in v.
  Matrix Hessian(const BatchView& v) const {
    Matrix h = rho_ * Matrix::Identity(d2_, d2_);
    for (int k = 0; k < v.rows.n; ++k) {
      const Vector a = v.batch->dense.row(v.rows.row(k)).head(d2_).transpose();
      h += a * a.transpose() / v.rows.n;
    }
    return h;
  }
  Matrix Cross(const BatchView& v) const {
    Matrix b = Matrix::Zero(d2_, d1_);
    for (int k = 0; k < v.rows.n; ++k) {
      const int i = v.rows.row(k);
      const Vector a = v.batch->dense.row(i).head(d2_).transpose();
      const Vector p = v.batch->dense.row(i).tail(d1_).transpose();
      b += a * p.transpose() / v.rows.n;
    }
    return b;
  }

 private:
  int d1_, d2_;
  double rho_;
  Vector d_;
};

constexpr int kD1 = 3, kD2 = 5, kRows = 40;

struct Problem {
  StepData step;
  Vector d;
  explicit Problem(uint64_t seed) {
    std::mt19937_64 rng(seed);
    step.inner.dense = testing::RandomMatrix(kRows, kD2 + kD1, rng);
    step.inner.targets = RandomVector(kRows, rng);
    d = RandomVector(kD2, rng);
  }
  LinearQuadraticFamily BilevelFamily() const { return LinearQuadraticFamily(kD1, kD2, 0.3, d); }
};

TEST(PzoboDelta, EqualsTheUnrolledJacobianTimesUForAnyMu) {
  const Problem p(401);
  LinearQuadraticFamily family = p.BilevelFamily();
  std::mt19937_64 rng(402);
  const Vector x = RandomVector(kD1, rng), y0 = RandomVector(kD2, rng);
  const Vector u = RandomVector(kD1, rng);
  const BatchView all = BatchView::All(p.step.inner);
  const Matrix h = family.Hessian(all), b = family.Cross(all);
  for (int n : {1, 4, 25}) {
    const double alpha = 0.5 / h.operatorNorm();
    // J_N = [I - (I - alpha H)^N] H^{-1} B: N GD steps from a common start.
    Matrix contraction = Matrix::Identity(kD2, kD2);
    for (int k = 0; k < n; ++k) contraction *= Matrix::Identity(kD2, kD2) - alpha * h;
    const Matrix j_n = (Matrix::Identity(kD2, kD2) - contraction) * h.ldlt().solve(b);
    const Vector expected = j_n * u;
    std::vector<BatchView> views(n, all);
    InnerPaths paths(kD1, kD2);
    Vector y_n = y0, delta(kD2);
    ASSERT_TRUE(paths.Run(family, x, alpha, views.data(), n, &y_n).ok());
    for (double mu : {1e-6, 1e-2, 1.0, 100.0}) {
      ASSERT_TRUE(paths.Delta(family, x, u, mu, alpha, y0, y_n, views.data(), n, &delta).ok());
      // Rounding of y (~1e-16 |y|) is divided by mu.
      const double tol = 1e-13 * (1 + y_n.norm()) * (1 + 1 / mu);
      EXPECT_LT((delta - expected).norm(), tol * (1 + expected.norm()))
          << "N = " << n << ", mu = " << mu << ": " << delta.transpose() << "\nvs "
          << expected.transpose();
    }
  }
}

// With a mini-batch S_k per step shared by both paths,
//   J_N = sum_k (I - alpha H_{N-1}) ... (I - alpha H_{k+1}) alpha B_k.
TEST(PzoboDelta, EqualsTheUnrolledJacobianOverASharedMiniBatchSequence) {
  const Problem p(403);
  LinearQuadraticFamily family = p.BilevelFamily();
  std::mt19937_64 rng(404);
  const Vector x = RandomVector(kD1, rng), y0 = RandomVector(kD2, rng);
  const Vector u = RandomVector(kD1, rng);
  const int n = 6, batch = 7;
  std::vector<std::vector<int>> idx(n);
  std::vector<BatchView> views;
  for (int k = 0; k < n; ++k) {
    for (int i = 0; i < batch; ++i) idx[k].push_back((5 * k + 3 * i) % kRows);
    views.push_back(BatchView{&p.step.inner, RowSet{idx[k].data(), batch}});
  }
  const double alpha = 0.05;
  Matrix j_n = Matrix::Zero(kD2, kD1);
  for (int k = 0; k < n; ++k) {  // J^{k+1} = (I - alpha H_k) J^k + alpha B_k
    j_n = (Matrix::Identity(kD2, kD2) - alpha * family.Hessian(views[k])) * j_n +
          alpha * family.Cross(views[k]);
  }
  InnerPaths paths(kD1, kD2);
  Vector y_n = y0, delta(kD2);
  ASSERT_TRUE(paths.Run(family, x, alpha, views.data(), n, &y_n).ok());
  for (double mu : {1e-5, 1.0, 50.0}) {
    ASSERT_TRUE(paths.Delta(family, x, u, mu, alpha, y0, y_n, views.data(), n, &delta).ok());
    EXPECT_LT((delta - j_n * u).norm(), 1e-9 * (1 + (j_n * u).norm())) << "mu = " << mu;
  }
}

TEST(GaussianDirections, AreReproducibleFromTheSeedAndStandardNormal) {
  GaussianDirections a(7), b(7), c(8);
  Vector ua(5), ub(5), uc(5);
  a.Next(&ua);
  b.Next(&ub);
  c.Next(&uc);
  EXPECT_EQ(ua, ub);
  EXPECT_NE(ua, uc);
  GaussianDirections g(9);
  Vector v(100000);
  g.Next(&v);
  const double mean = v.mean();
  const double var = (v.array() - mean).square().mean();
  EXPECT_NEAR(mean, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.02);
  EXPECT_NEAR((v.array().abs() < 1.0).cast<double>().mean(), 0.6827, 0.01);
}

// The round: h = grad_x f + (1/Q) sum_j <J_N u_j, y^N - d> u_j with u_j
// regenerated from the round seed (the first draw of the session RNG).
TEST(Pzobo, RoundHypergradientUsesTheRegeneratedDirections) {
  const Problem p(405);
  LinearQuadraticFamily family = p.BilevelFamily();
  std::mt19937_64 rng(406);
  AlgorithmOptions o = DefaultAlgorithmOptions("pzobo");
  o.pz_directions = 4;
  o.pz_smoothing = 0.5;
  o.inner_steps = 3;
  o.alpha = 0.05;
  o.gamma = 0.2;
  std::unique_ptr<BilevelAlgorithm> pzobo =
      *CreateBilevelAlgorithm(BilevelAlgorithmContext{"pzobo", o, ConstraintSet::None(), kD1, kD2});
  const Vector y0 = RandomVector(kD2, rng);
  SessionState st = testing::BilevelState(RandomVector(kD1, rng), y0, y0, 0.0, 11);
  BilevelVars s = BilevelView(&st);
  const SessionState before = st;
  BilevelReport report;
  report.hypergradient.resize(kD1);
  ASSERT_TRUE(pzobo->Round(p.step, family, &s, &report).ok());

  const BatchView all = BatchView::All(p.step.inner);
  const Matrix h = family.Hessian(all), b = family.Cross(all);
  const Vector c =
      Matrix(p.step.inner.dense.leftCols(kD2)).transpose() * p.step.inner.targets / kRows;
  Vector y = BilevelView(before).y;
  Matrix j_n = Matrix::Zero(kD2, kD1);
  for (int k = 0; k < 3; ++k) {
    y = y - 0.05 * (h * y - b * before.x - c);
    j_n = (Matrix::Identity(kD2, kD2) - 0.05 * h) * j_n + 0.05 * b;
  }
  Rng replay = before.rng;
  GaussianDirections directions(replay.Next());
  Vector expected = Vector::Zero(kD1), u(kD1);
  for (int j = 0; j < 4; ++j) {
    directions.Next(&u);
    expected += (j_n * u).dot(y - p.d) * u;
  }
  expected /= 4.0;
  EXPECT_LT((report.hypergradient - expected).norm(), 1e-10 * (1 + expected.norm()))
      << report.hypergradient.transpose() << "\nvs " << expected.transpose();
  EXPECT_LT((s.y - y).norm(), 1e-12);  // warm start of the next round: y^N
  EXPECT_LT((s.x - (before.x - 0.2 * expected)).norm(), 1e-12);
  EXPECT_TRUE(s.rng == replay);  // PZOBO draws nothing else
  EXPECT_EQ(report.y_iterations, 3);
  EXPECT_EQ(report.rows_processed, (4 + 1) * 3 * kRows + kRows);
}

// PZOBO-S: the paths share their mini-batches, so for this family delta is
// exactly linear in u and the hypergradient does not depend on mu.
TEST(PzoboS, CommonMiniBatchesMakeTheHypergradientIndependentOfMu) {
  const Problem p(407);
  std::mt19937_64 rng(408);
  const Vector x = RandomVector(kD1, rng), y = RandomVector(kD2, rng);
  std::vector<Vector> h;
  for (double mu : {1e-6, 1.0, 30.0}) {
    LinearQuadraticFamily family = p.BilevelFamily();
    AlgorithmOptions o = DefaultAlgorithmOptions("pzobo_s");
    o.pz_smoothing = mu;
    o.sample_rows = 6;
    o.alpha = 0.05;
    std::unique_ptr<BilevelAlgorithm> a = *CreateBilevelAlgorithm(
        BilevelAlgorithmContext{"pzobo_s", o, ConstraintSet::None(), kD1, kD2});
    SessionState st = testing::BilevelState(x, y, y, 0.0, 12);
    BilevelVars s = BilevelView(&st);
    BilevelReport report;
    report.hypergradient.resize(kD1);
    ASSERT_TRUE(a->Round(p.step, family, &s, &report).ok());
    EXPECT_EQ(report.batch_size, 6);
    EXPECT_EQ(report.rows_processed, (10 + 1) * 5 * 6 + 0 + 6);  // empty upper batch
    h.push_back(report.hypergradient);
  }
  EXPECT_LT((h[0] - h[1]).norm(), 1e-7 * h[1].norm());
  EXPECT_LT((h[2] - h[1]).norm(), 1e-10 * h[1].norm());
}

struct Quadratic {
  StepData step;
  FamilyConfig family;
  explicit Quadratic(uint64_t seed) {
    std::mt19937_64 rng(seed);
    step = testing::QuadraticStep(testing::WellConditioned(4, 3, 0.7, 1.3, rng),
                                  RandomVector(4, rng), RandomVector(4, rng));
    family.name = "quadratic";
    family.x_dim = 3;
    family.y_dim = 4;
    family.mu = 2.0;
  }
};

TEST(Pzobo, BothVariantsConvergeOnAStaticQuadraticStream) {
  const Quadratic q(410);
  for (const char* algorithm : {"pzobo", "pzobo_s"}) {
    SessionConfig config = ConfigFor(algorithm, q.family, ConstraintSet::None());
    config.options.gamma = 0.1;
    config.seed = 3;
    auto session = *Session::Create(config);
    for (int t = 1; t <= 3000; ++t) ASSERT_TRUE(session->Step(q.step).ok());
    const TrueHypergradient truth =
        ComputeTrueHypergradient(*testing::PreparedFamily(*session, q.step), session->state().x,
                                 q.step, BilevelView(session->state()).y, ExactMetricsOptions{});
    EXPECT_LT(truth.grad.norm(), 1e-6) << algorithm << ": " << session->state().x.transpose();
  }
}

std::vector<StepData> DriftingRidgeStream(int steps, int dim, bool sparse) {
  std::mt19937_64 rng(420);
  Vector w = RandomVector(dim, rng);
  std::vector<StepData> stream;
  for (int t = 0; t < steps; ++t) {
    w += 0.05 * RandomVector(dim, rng);
    stream.push_back(StepData{testing::RegressionBatch(48, w, 0.1, sparse, rng),
                              testing::RegressionBatch(64, w, 0.5, sparse, rng)});
  }
  return stream;
}

SessionConfig RidgeConfig(const std::string& algorithm, int dim, uint64_t seed) {
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = dim;
  fam.mu0 = 0.1;
  SessionConfig c = ConfigFor(algorithm, fam, ConstraintSet::Box(0.0, 1.0));
  c.seed = seed;
  c.options.gamma = 0.05;
  c.options.sample_rows = 16;
  c.options.pz_smoothing = 0.01;
  return c;
}

TEST(Pzobo, SaveAndRestoreMidStreamContinuesBitForBit) {
  for (const char* algorithm : {"pzobo", "pzobo_s"}) {
    for (bool sparse : {false, true}) {
      const auto stream = DriftingRidgeStream(30, 6, sparse);
      const SessionConfig config = RidgeConfig(algorithm, 6, 99);
      auto uninterrupted = *Session::Create(config);
      auto first = *Session::Create(config);
      for (int t = 0; t < 30; ++t) ASSERT_TRUE(uninterrupted->Step(stream[t]).ok());
      for (int t = 0; t < 13; ++t) ASSERT_TRUE(first->Step(stream[t]).ok());
      const std::string bytes = first->Encode(first->state());
      first.reset();
      auto restored = *Session::Restore(config, *DeserializeCheckpoint(bytes));
      for (int t = 13; t < 30; ++t) ASSERT_TRUE(restored->Step(stream[t]).ok());
      EXPECT_TRUE(restored->state().BitEquals(uninterrupted->state()))
          << algorithm << ", sparse " << sparse;
      // The seed matters: other directions (and, for pzobo_s, rows).
      auto other = *Session::Create(RidgeConfig(algorithm, 6, 100));
      for (int t = 0; t < 30; ++t) ASSERT_TRUE(other->Step(stream[t]).ok());
      EXPECT_NE(other->state().x, uninterrupted->state().x) << algorithm;
    }
  }
}

TEST(Pzobo, ANonFiniteRoundFailsAndLeavesTheStateUnchanged) {
  const auto stream = DriftingRidgeStream(3, 4, false);
  for (const char* algorithm : {"pzobo", "pzobo_s"}) {
    SessionConfig config = RidgeConfig(algorithm, 4, 5);
    auto ok = *Session::Create(config);
    ASSERT_TRUE(ok->Step(stream[0]).ok());
    config.options.alpha = 1e150;  // the inner paths leave the safe magnitude
    auto session = *Session::Restore(config, *DeserializeCheckpoint(ok->Encode(ok->state())));
    const SessionState before = session->state();
    const auto r = session->Step(stream[1]);
    ASSERT_FALSE(r.ok()) << algorithm;
    EXPECT_NE(std::string(r.status().message()).find("non-finite"), std::string::npos)
        << r.status();
    EXPECT_TRUE(session->state().BitEquals(before)) << algorithm;
  }
}

TEST(PzoboOptions, EachInvalidOptionNamesItsField) {
  struct Case {
    const char* algorithm;
    const char* field;
    void (*spoil)(AlgorithmOptions*);
  };
  const Case cases[] = {
      {"pzobo", "options.alpha", [](AlgorithmOptions* o) { o->alpha = -1; }},
      {"pzobo", "options.gamma", [](AlgorithmOptions* o) { o->gamma = -1; }},
      {"pzobo", "options.inner_steps", [](AlgorithmOptions* o) { o->inner_steps = 0; }},
      {"pzobo", "options.pz_directions", [](AlgorithmOptions* o) { o->pz_directions = 0; }},
      {"pzobo_s", "options.pz_directions", [](AlgorithmOptions* o) { o->pz_directions = 10001; }},
      {"pzobo", "options.pz_smoothing", [](AlgorithmOptions* o) { o->pz_smoothing = 0; }},
      {"pzobo_s", "options.pz_smoothing",
       [](AlgorithmOptions* o) { o->pz_smoothing = std::nan(""); }},
      {"pzobo_s", "options.sample_rows", [](AlgorithmOptions* o) { o->sample_rows = 0; }},
  };
  for (const Case& c : cases) {
    AlgorithmOptions o = DefaultAlgorithmOptions(c.algorithm);
    ASSERT_TRUE(ValidateOptionsFor(c.algorithm, o).ok()) << c.algorithm;
    c.spoil(&o);
    const absl::Status s = ValidateOptionsFor(c.algorithm, o);
    ASSERT_FALSE(s.ok()) << c.algorithm << " " << c.field;
    EXPECT_EQ(std::string(s.message()).rfind(std::string(c.field) + ":", 0), 0u) << s.message();
  }
  AlgorithmOptions o = DefaultAlgorithmOptions("pzobo");
  o.sample_rows = 0;       // pzobo uses the full batches
  o.momentum = 5;          // svrb / sogd only
  o.max_explicit_dim = 0;  // svrb only
  o.hessian_floor = -1;    // svrb only
  EXPECT_TRUE(ValidateOptionsFor("pzobo", o).ok());
  EXPECT_FALSE(ValidateOptionsFor("pzobo_s", o).ok());
}

}  // namespace
}  // namespace f2obo
