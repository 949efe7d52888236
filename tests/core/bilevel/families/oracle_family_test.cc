// The oracle family in process (no gRPC): with an Oracle that answers with
// logistic_hpo's math, a session follows the logistic_hpo session of the
// same options; a failing oracle fails the step with its own status and
// changes nothing; what it cannot serve is refused at create.
#include "core/bilevel/families/oracle_family.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "core/family_registry.h"
#include "core/session.h"
#include "tests/core/test_streams.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;

constexpr int kFeatures = 6, kClasses = 3;

FamilyConfig Logistic() {
  FamilyConfig fam;
  fam.name = "logistic_hpo";
  fam.features = kFeatures;
  fam.classes = kClasses;
  return fam;
}

// Answers with a logistic_hpo family on `data`; fails from call `fail_at`.
class LogisticOracle final : public Oracle {
 public:
  explicit LogisticOracle(const StepData& data, int fail_at = -1)
      : family_(*CreateFamily(Logistic())), data_(data), fail_at_(fail_at) {
    family_->Prepare(data_);
  }
  absl::Status Evaluate(absl::Span<OracleQuery> queries) override {
    if (calls_++ == fail_at_) return absl::InvalidArgumentError("planted: the client lied");
    for (OracleQuery& q : queries) {
      const Eigen::Map<const Vector> x(q.x.data(), q.x.size()), y(q.y.data(), q.y.size());
      const bool f = q.function == OracleQuery::Function::kF;
      const BatchView view{f ? &data_.upper : &data_.inner, q.rows};
      const double v = f ? family_->F(x, y, view, q.grad_x, q.grad_y)
                         : family_->G(x, y, view, q.grad_x, q.grad_y);
      if (q.value != nullptr) *q.value = v;
      if (q.fused) {  // grad_y f + fuse_g grad_y g, g on g_rows of the inner batch
        EXPECT_TRUE(f) << "only a query of f is fused";
        Vector gy_g(y.size());
        family_->G(x, y, BatchView{&data_.inner, q.g_rows}, nullptr, &gy_g);
        *q.grad_y += q.fuse_g * gy_g;
        ++fused_;
      }
    }
    return absl::OkStatus();
  }
  int calls() const { return calls_; }
  int fused() const { return fused_; }

 private:
  std::unique_ptr<Family> family_;
  const StepData& data_;
  const int fail_at_;
  int calls_ = 0;
  int fused_ = 0;
};

SessionConfig Config(const std::string& algorithm, const FamilyConfig& fam) {
  SessionConfig c = testing::ConfigFor(algorithm, fam, ConstraintSet::Box(0.0, 0.1));
  c.options.alpha = 0.1;
  c.options.beta = 0.5;
  c.seed = 3;
  return c;
}

FamilyConfig OracleOf(int d1, int d2) {
  FamilyConfig fam;
  fam.name = OracleFamily::kName;
  fam.x_dim = d1;
  fam.y_dim = d2;
  return fam;
}

StepData WithOracle(std::shared_ptr<Oracle> oracle, const StepData& data) {
  StepData out;
  out.upper.oracle = out.inner.oracle = std::move(oracle);
  out.upper.oracle_rows = data.upper.rows();
  out.inner.oracle_rows = data.inner.rows();
  return out;
}

TEST(OracleFamily, FollowsTheFamilyItsOracleAnswersWithForEveryFirstOrderAlgorithm) {
  for (const char* algorithm : {"f2obo", "f2obo_sl", "af2obo", "sf2obo"}) {
    SCOPED_TRACE(algorithm);
    auto built_in = *Session::Create(Config(algorithm, Logistic()));
    const int d1 = built_in->state().x.size(), d2 = (kFeatures + 1) * kClasses;
    auto oracle = *Session::Create(Config(algorithm, OracleOf(d1, d2)));
    std::mt19937_64 rng(11);
    for (int t = 1; t <= 10; ++t) {
      const StepData data{testing::ClassificationBatch(20, kFeatures, kClasses, false, rng),
                          testing::ClassificationBatch(30, kFeatures, kClasses, false, rng)};
      ASSERT_TRUE(built_in->Step(data).ok());
      ASSERT_TRUE(oracle->Step(WithOracle(std::make_shared<LogisticOracle>(data), data)).ok());
      EXPECT_LE((built_in->state().x - oracle->state().x).lpNorm<Eigen::Infinity>(), 1e-12);
    }
    EXPECT_EQ(oracle->state().t, 11);
    for (size_t i = 0; i < built_in->state().vectors.size(); ++i) {
      EXPECT_LE(
          (built_in->state().vectors[i] - oracle->state().vectors[i]).lpNorm<Eigen::Infinity>(),
          1e-12);
    }
  }
}

TEST(OracleFamily, FailingOracleFailsTheStepWithItsStatusAndChangesNothing) {
  auto s = *Session::Create(Config("f2obo", OracleOf(kFeatures, (kFeatures + 1) * kClasses)));
  std::mt19937_64 rng(5);
  const StepData data{testing::ClassificationBatch(20, kFeatures, kClasses, false, rng),
                      testing::ClassificationBatch(30, kFeatures, kClasses, false, rng)};
  ASSERT_TRUE(s->Step(WithOracle(std::make_shared<LogisticOracle>(data), data)).ok());
  const SessionState before = s->state();
  auto failing = std::make_shared<LogisticOracle>(data, /*fail_at=*/2);
  const auto r = s->Step(WithOracle(failing, data));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("planted: the client lied"));
  EXPECT_EQ(failing->calls(), 3);  // asked nothing after the failure
  EXPECT_TRUE(s->state().BitEquals(before));
}

TEST(OracleFamily, StepWithoutAnOracleIsRefused) {
  auto s = *Session::Create(Config("f2obo", OracleOf(kFeatures, (kFeatures + 1) * kClasses)));
  std::mt19937_64 rng(5);
  const StepData data{testing::ClassificationBatch(20, kFeatures, kClasses, false, rng),
                      testing::ClassificationBatch(30, kFeatures, kClasses, false, rng)};
  const auto r = s->Step(data);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("OracleSteps"));
}

TEST(OracleFamily, RefusesSecondOrderAlgorithmsAutoStepsAndMissingDimensions) {
  const FamilyConfig fam = OracleOf(3, 4);
  for (const char* algorithm : {"obbo", "aobo", "sobow", "fsobo", "sogd"}) {
    const auto s = Session::Create(Config(algorithm, fam));
    ASSERT_FALSE(s.ok()) << algorithm;
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("Hessian-vector products"));
  }
  SessionConfig auto_steps = Config("f2obo", fam);
  auto_steps.options.beta = 0.0;  // automatic
  EXPECT_THAT(std::string(Session::Create(auto_steps).status().message()),
              HasSubstr("options.alpha_auto, options.beta_auto"));
  EXPECT_FALSE(Session::Create(Config("f2obo", OracleOf(0, 4))).ok());
}

}  // namespace
}  // namespace f2obo
