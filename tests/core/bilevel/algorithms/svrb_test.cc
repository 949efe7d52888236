// SVRB (core/bilevel/algorithms/svrb.cc): the projections S^u_C and S^l_lambda on
// random matrices, the hypergradient against closed forms (with and without
// active projections), STORM estimates that equal the full derivatives on a
// static full-batch stream, convergence, the explicit-size refusal,
// checkpoint continuation and transactional failure.
#include "core/bilevel/algorithms/svrb.h"

#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/bilevel/bilevel_exact_metrics.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/hypergradients/spectral_projections.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "tests/core/bilevel/families/family_checks.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using testing::ConfigFor;
using testing::RandomVector;

Matrix RandomSymmetric(int n, std::mt19937_64& rng) {
  const Matrix a = testing::RandomMatrix(n, n, rng);
  return (a + a.transpose()) / 2;
}

TEST(SvrbProjections, EigenvaluesBelowLambdaAreRaisedAndTheOthersKept) {
  std::mt19937_64 rng(301);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 2 + trial % 7;
    const Matrix h = RandomSymmetric(n, rng);
    Eigen::SelfAdjointEigenSolver<Matrix> in(h);
    const Vector& l = in.eigenvalues();           // ascending
    const double lambda = (l[0] + l[n - 1]) / 2;  // some raised, some kept
    const Matrix r = RaiseEigenvalues(h, lambda);
    EXPECT_LT((r - r.transpose()).norm(), 1e-12);
    // Same eigenvectors, eigenvalues max(l_i, lambda).
    for (int i = 0; i < n; ++i) {
      const Vector q = in.eigenvectors().col(i);
      const double expected = std::max(l[i], lambda);
      EXPECT_LT((r * q - expected * q).norm(), 1e-12 * (1 + std::abs(expected)))
          << "trial " << trial << ", eigenvalue " << l[i] << ", lambda " << lambda;
    }
    Eigen::SelfAdjointEigenSolver<Matrix> out(r);
    EXPECT_GE(out.eigenvalues()[0], lambda - 1e-12);
  }
}

TEST(SvrbProjections, AMatrixAlreadyAboveLambdaIsReturnedBitForBit) {
  std::mt19937_64 rng(302);
  const Matrix a = testing::RandomMatrix(5, 5, rng);
  const Matrix h = a * a.transpose() + Matrix::Identity(5, 5);  // eigenvalues >= 1
  const Matrix r = RaiseEigenvalues(h, 0.5);
  EXPECT_TRUE(r == (h + h.transpose()) * 0.5);
}

TEST(SvrbProjections, NonSymmetricInputIsProjectedThroughItsSymmetricPart) {
  std::mt19937_64 rng(303);
  const Matrix h = testing::RandomMatrix(4, 4, rng);
  const Matrix sym = (h + h.transpose()) / 2;
  EXPECT_LT((RaiseEigenvalues(h, -100.0) - sym).norm(), 1e-14);
}

TEST(SvrbProjections, SingularValuesAboveCAreClippedAndTheOthersKept) {
  std::mt19937_64 rng(304);
  for (int trial = 0; trial < 20; ++trial) {
    const int m = 1 + trial % 6, n = 1 + (trial * 5) % 7;  // tall, wide and square
    const Matrix j = 2.0 * Matrix(testing::RandomMatrix(m, n, rng));
    Eigen::JacobiSVD<Matrix> in(j, Eigen::ComputeThinU | Eigen::ComputeThinV);
    const Vector& s = in.singularValues();  // descending
    const int k = static_cast<int>(s.size());
    const double c = k > 1 ? (s[0] + s[k - 1]) / 2 : s[0] / 2;
    const Matrix r = ClipSingularValues(j, c);
    for (int i = 0; i < k; ++i) {
      const Vector u = in.matrixU().col(i), v = in.matrixV().col(i);
      const double expected = std::min(s[i], c);
      EXPECT_LT((r * v - expected * u).norm(), 1e-12 * (1 + s[0]))
          << "trial " << trial << ", sigma " << s[i] << ", C " << c;
      EXPECT_LT((r.transpose() * u - expected * v).norm(), 1e-12 * (1 + s[0]));
    }
    Eigen::JacobiSVD<Matrix> out(r);
    EXPECT_LE(out.singularValues()[0], c * (1 + 1e-12));
  }
}

TEST(SvrbProjections, AMatrixWithinCIsReturnedBitForBit) {
  std::mt19937_64 rng(305);
  const Matrix j = testing::RandomMatrix(3, 5, rng);
  EXPECT_TRUE(ClipSingularValues(j, 1e3) == j);
}

constexpr int kD1 = 3, kD2 = 4;
constexpr double kMu = 2.0;

struct Quadratic {
  Matrix M;
  Vector c, d;
  StepData step;
  FamilyConfig family;
  explicit Quadratic(uint64_t seed, int d1 = kD1, int d2 = kD2) {
    std::mt19937_64 rng(seed);
    M = testing::WellConditioned(d2, d1, 0.7, 1.3, rng);
    c = RandomVector(d2, rng);
    d = RandomVector(d2, rng);
    step = testing::QuadraticStep(M, c, d);
    family.name = "quadratic";
    family.x_dim = d1;
    family.y_dim = d2;
    family.mu = kMu;
  }
};

// quadratic: grad_x f = 0, grad_y f = y - d, grad2_xy g = -mu M^T,
// grad2_yy g = mu I, grad_y g = mu (y - M x - c).  Deterministic oracles make
// every STORM estimate exact, so h_t = u - S_C(J) S_lambda(H)^{-1} w at
// (x_t, y_t) and y_{t+1} = y_t - alpha mu (y_t - M x_t - c).
void ExpectClosedFormRounds(double clip, double floor) {
  const Quadratic q(310);
  std::mt19937_64 rng(311);
  SessionConfig config = ConfigFor("svrb", q.family, ConstraintSet::None());
  config.options.jacobian_clip = clip;
  config.options.hessian_floor = floor;
  config.options.gamma = 0.3;
  config.options.alpha = 0.1;  // the reference below's fixed step (the default is automatic)
  config.x0 = RandomVector(kD1, rng);
  config.y0 = RandomVector(kD2, rng);
  auto session = *Session::Create(config);
  const Matrix j = ClipSingularValues(-kMu * q.M.transpose(), clip);
  const Matrix h = RaiseEigenvalues(kMu * Matrix::Identity(kD2, kD2), floor);
  for (int t = 1; t <= 5; ++t) {
    const Vector x = session->state().x, y = BilevelView(session->state()).y;
    const StepReport report = *session->Step(q.step);
    const Vector expected = -j * h.ldlt().solve(y - q.d);
    EXPECT_LT((BilevelPart(report).hypergradient - expected).norm(), 1e-12 * (1 + expected.norm()))
        << "t = " << t << ": " << BilevelPart(report).hypergradient.transpose() << "\nvs "
        << expected.transpose();
    EXPECT_LT((session->state().x - (x - 0.3 * expected)).norm(), 1e-12);
    const Vector y_next = y - 0.1 * kMu * (y - q.M * x - q.c);
    EXPECT_LT((BilevelView(session->state()).y - y_next).norm(), 1e-12) << "t = " << t;
  }
}

TEST(Svrb, HypergradientIsTheClosedFormAidAtTheCurrentIterate) {
  ExpectClosedFormRounds(100.0, 1e-3);  // projections inactive: h = M^T (y - d)
}

TEST(Svrb, ActiveProjectionsEnterTheHypergradient) {
  // sigma(mu M) in [1.4, 2.6] > C = 1.5, and mu = 2 < lambda = 3.
  ExpectClosedFormRounds(1.5, 3.0);
}

// A static ridge_hpo stream with full batches (sample_rows >= rows): the
// STORM recursion telescopes, so every estimate equals the full derivative
// at the current iterate (to rounding), although grad2_yy g depends on x.
TEST(Svrb, StormEstimatesEqualTheFullDerivativesOnAStaticFullBatchStream) {
  std::mt19937_64 rng(320);
  const int dim = 4;
  const Vector w = RandomVector(dim, rng);
  StepData step;
  step.inner = testing::RegressionBatch(30, w, 0.5, false, rng);
  step.upper = testing::RegressionBatch(20, w, 0.1, false, rng);
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = dim;
  fam.mu0 = 0.05;
  SessionConfig config = ConfigFor("svrb", fam, ConstraintSet::Box(0.0, 5.0));
  config.options.sample_rows = 1000;
  config.options.gamma = 0.2;
  config.x0 = Vector::Constant(dim, 0.5);
  auto session = *Session::Create(config);
  std::unique_ptr<BilevelFamily> family = *CreateBilevelFamily(fam);
  family->Prepare(step);
  const BatchView inner = BatchView::All(step.inner), upper = BatchView::All(step.upper);
  for (int t = 1; t <= 8; ++t) {
    const Vector x = session->state().x, y = BilevelView(session->state()).y;
    const StepReport report = *session->Step(step);
    Vector gx_f(dim), gy_f(dim), gy_g(dim), col(dim), e = Vector::Zero(dim);
    Matrix jxy(dim, dim), hyy(dim, dim);
    family->F(x, y, upper, &gx_f, &gy_f);
    family->G(x, y, inner, nullptr, &gy_g);
    for (int k = 0; k < dim; ++k) {
      e[k] = 1;
      family->HvpXYG(x, y, inner, e, &col);
      jxy.col(k) = col;
      family->HvpYYG(x, y, inner, e, &col);
      hyy.col(k) = col;
      e[k] = 0;
    }
    const StateParts& aux = session->state().aux;
    ASSERT_EQ(aux.size(), 7u);
    EXPECT_LT((aux[0] - gx_f).norm(), 1e-12) << "t = " << t;
    EXPECT_LT((aux[1] - gy_f).norm(), 1e-12) << "t = " << t;
    EXPECT_LT((aux[2] - gy_g).norm(), 1e-12) << "t = " << t;
    EXPECT_LT((Eigen::Map<const Matrix>(aux[3].data(), dim, dim) - jxy).norm(), 1e-12);
    EXPECT_LT((Eigen::Map<const Matrix>(aux[4].data(), dim, dim) - hyy).norm(), 1e-12);
    const Vector expected = gx_f - jxy * hyy.ldlt().solve(gy_f);
    EXPECT_LT((BilevelPart(report).hypergradient - expected).norm(), 1e-10 * (1 + expected.norm()));
    EXPECT_EQ(aux[5], x);
    EXPECT_EQ(aux[6], y);
    // F, G and 2 d2 HVPs at two points (one at t = 1), plus the residual.
    const int points = t == 1 ? 1 : 2;
    EXPECT_EQ(report.rows_processed, points * (20 + 30 + 2 * dim * 30) + 30);
  }
}

TEST(Svrb, ConvergesOnAStaticQuadraticStream) {
  const Quadratic q(330);
  SessionConfig config = ConfigFor("svrb", q.family, ConstraintSet::None());
  config.options.gamma = 0.1;
  auto session = *Session::Create(config);
  for (int t = 1; t <= 3000; ++t) ASSERT_TRUE(session->Step(q.step).ok());
  const TrueHypergradient truth =
      ComputeTrueHypergradient(*testing::PreparedFamily(*session, q.step), session->state().x,
                               q.step, BilevelView(session->state()).y, ExactMetricsOptions{});
  EXPECT_LT(truth.grad.norm(), 1e-6) << session->state().x.transpose();
}

TEST(Svrb, RefusesProblemsAboveMaxExplicitDimAtCreation) {
  for (const auto& [d1, d2] : {std::pair{3, 300}, std::pair{300, 3}}) {
    const Quadratic q(340, d1, d2);
    SessionConfig config = ConfigFor("svrb", q.family, ConstraintSet::None());
    const auto refused = Session::Create(config);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(refused.status().message());
    EXPECT_EQ(message.rfind("options.max_explicit_dim:", 0), 0u) << message;
    EXPECT_NE(message.find("x_dim = " + std::to_string(d1) + ", y_dim = " + std::to_string(d2)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("max_explicit_dim = 256"), std::string::npos) << message;
    config.options.max_explicit_dim = 300;
    EXPECT_TRUE(Session::Create(config).ok());
    EXPECT_TRUE(ValidateSessionConfig(config).ok());
    config.options.max_explicit_dim = 299;
    EXPECT_FALSE(ValidateSessionConfig(config).ok());
  }
}

std::vector<StepData> DriftingRidgeStream(int steps, int dim, bool sparse) {
  std::mt19937_64 rng(350);
  Vector w = RandomVector(dim, rng);
  std::vector<StepData> stream;
  for (int t = 0; t < steps; ++t) {
    w += 0.05 * RandomVector(dim, rng);
    stream.push_back(StepData{testing::RegressionBatch(48, w, 0.1, sparse, rng),
                              testing::RegressionBatch(64, w, 0.5, sparse, rng)});
  }
  return stream;
}

SessionConfig RidgeConfig(int dim, uint64_t seed) {
  FamilyConfig fam;
  fam.name = "ridge_hpo";
  fam.features = dim;
  fam.mu0 = 0.1;
  SessionConfig c = ConfigFor("svrb", fam, ConstraintSet::Box(0.0, 1.0));
  c.seed = seed;
  c.options.gamma = 0.05;
  c.options.sample_rows = 16;
  return c;
}

TEST(Svrb, SaveAndRestoreMidStreamContinuesBitForBit) {
  for (bool sparse : {false, true}) {
    const auto stream = DriftingRidgeStream(30, 6, sparse);
    const SessionConfig config = RidgeConfig(6, 99);
    auto uninterrupted = *Session::Create(config);
    auto first = *Session::Create(config);
    for (int t = 0; t < 30; ++t) ASSERT_TRUE(uninterrupted->Step(stream[t]).ok());
    for (int t = 0; t < 13; ++t) ASSERT_TRUE(first->Step(stream[t]).ok());
    const std::string bytes = first->Encode(first->state());
    first.reset();
    auto restored = *Session::Restore(config, *DeserializeCheckpoint(bytes));
    for (int t = 13; t < 30; ++t) ASSERT_TRUE(restored->Step(stream[t]).ok());
    EXPECT_TRUE(restored->state().BitEquals(uninterrupted->state())) << "sparse " << sparse;
    // Seeded draws: another seed samples other rows.
    auto other = *Session::Create(RidgeConfig(6, 100));
    for (int t = 0; t < 30; ++t) ASSERT_TRUE(other->Step(stream[t]).ok());
    EXPECT_NE(BilevelView(other->state()).y, BilevelView(uninterrupted->state()).y);
  }
}

TEST(Svrb, ANonFiniteRoundFailsAndLeavesTheStateUnchanged) {
  const auto stream = DriftingRidgeStream(6, 4, false);
  SessionConfig config = RidgeConfig(4, 5);
  config.options.alpha = 1e75;  // y ~ 1e77 after one round, past 1e150 after two
  auto session = *Session::Create(config);
  int t = 0;
  absl::StatusOr<StepReport> r;
  SessionState before;
  do {
    ASSERT_LT(t, 6) << "no round overflowed";
    before = session->state();
    r = session->Step(stream[t++]);
  } while (r.ok());
  EXPECT_GE(t, 2);
  EXPECT_NE(std::string(r.status().message()).find("non-finite"), std::string::npos) << r.status();
  EXPECT_NE(std::string(r.status().message()).find("state unchanged"), std::string::npos);
  EXPECT_TRUE(session->state().BitEquals(before));
  EXPECT_EQ(session->state().FirstOutOfRange(session->problem().layout(), kMaxStateMagnitude), "");
}

// A family whose grad2_yy g turns NaN from its third call on (the first
// round builds H with y_dim calls): the round itself refuses.
class NanHessianFamily final : public BilevelFamily {
 public:
  explicit NanHessianFamily(std::unique_ptr<BilevelFamily> base) : base_(std::move(base)) {}
  std::string_view name() const override { return base_->name(); }
  int x_dim() const override { return base_->x_dim(); }
  int y_dim() const override { return base_->y_dim(); }
  absl::Status ValidateBatch(const Batch& b, BatchRole role) const override {
    return base_->ValidateBatch(b, role);
  }
  void Prepare(const StepData& data) override { base_->Prepare(data); }
  double F(const VecIn& x, const VecIn& y, const BatchView& v, Vector* gx, Vector* gy) override {
    return base_->F(x, y, v, gx, gy);
  }
  double G(const VecIn& x, const VecIn& y, const BatchView& v, Vector* gx, Vector* gy) override {
    return base_->G(x, y, v, gx, gy);
  }
  void HvpYYG(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpYYG(x, y, v, u, out);
    if (++calls_ > 2) (*out)[0] = std::nan("");
  }
  void HvpXYG(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpXYG(x, y, v, u, out);
  }
  void HvpYYF(const VecIn& x, const VecIn& y, const BatchView& v, const VecIn& u,
              Vector* out) override {
    base_->HvpYYF(x, y, v, u, out);
  }

 private:
  std::unique_ptr<BilevelFamily> base_;
  int calls_ = 0;
};

TEST(Svrb, ANaNHessianEstimateIsAnErrorNamingIt) {
  const Quadratic q(360);
  NanHessianFamily family(*CreateBilevelFamily(q.family));
  SessionConfig config = ConfigFor("svrb", q.family, ConstraintSet::None());
  std::unique_ptr<BilevelAlgorithm> svrb = *CreateBilevelAlgorithm(
      BilevelAlgorithmContext{"svrb", config.options, config.constraint, kD1, kD2});
  SessionState st =
      testing::BilevelState(Vector::Zero(kD1), Vector::Zero(kD2), Vector::Zero(kD2), 0.0);
  BilevelVars s = BilevelView(&st);
  BilevelReport report;
  family.Prepare(q.step);
  const absl::Status status = svrb->Round(q.step, family, &s, &report);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(std::string(status.message()).find("grad2_yy g estimate is not finite"),
            std::string::npos)
      << status;
}

TEST(SvrbOptions, EachInvalidOptionNamesItsField) {
  struct Case {
    const char* field;
    void (*spoil)(AlgorithmOptions*);
  };
  const Case cases[] = {
      {"options.alpha", [](AlgorithmOptions* o) { o->alpha = -0.1; }},
      {"options.gamma", [](AlgorithmOptions* o) { o->gamma = std::nan(""); }},
      {"options.momentum", [](AlgorithmOptions* o) { o->momentum = 1.0; }},
      {"options.momentum", [](AlgorithmOptions* o) { o->momentum = -0.1; }},
      {"options.sample_rows", [](AlgorithmOptions* o) { o->sample_rows = 0; }},
      {"options.max_explicit_dim", [](AlgorithmOptions* o) { o->max_explicit_dim = 0; }},
      {"options.max_explicit_dim", [](AlgorithmOptions* o) { o->max_explicit_dim = 2049; }},
      {"options.jacobian_clip", [](AlgorithmOptions* o) { o->jacobian_clip = 0; }},
      {"options.jacobian_clip",
       [](AlgorithmOptions* o) { o->jacobian_clip = std::numeric_limits<double>::infinity(); }},
      {"options.hessian_floor", [](AlgorithmOptions* o) { o->hessian_floor = -1e-3; }},
  };
  for (const Case& c : cases) {
    AlgorithmOptions o = DefaultAlgorithmOptions("svrb");
    ASSERT_TRUE(ValidateOptionsFor("svrb", o).ok());
    c.spoil(&o);
    const absl::Status s = ValidateOptionsFor("svrb", o);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(s.message()).rfind(std::string(c.field) + ":", 0), 0u) << s.message();
  }
  // Fields SVRB does not read are not checked.
  AlgorithmOptions o = DefaultAlgorithmOptions("svrb");
  o.lambda1 = 0;
  o.inner_steps = 0;
  o.pz_directions = 0;
  o.window = 0;
  EXPECT_TRUE(ValidateOptionsFor("svrb", o).ok());
}

}  // namespace
}  // namespace f2obo
