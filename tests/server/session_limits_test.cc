// SessionManager's per-session size guard (max_y_dim), on the manager
// directly.  Regression tests for three specs found by fuzz/step_fuzzer
// (their inputs are in fuzz/corpus/): each one used to get past the guard
// and then allocate gigabytes (or overflow an int) before the family or the
// limit could refuse it.
#include <climits>

#include "gtest/gtest.h"
#include "server/metrics_pipeline.h"
#include "server/session_manager.h"

namespace f2obo::server {
namespace {

class SessionLimitsTest : public ::testing::Test {
 protected:
  SessionLimitsTest() : mgr_(LimitsFor(1000), &pipeline_, nullptr) {}
  static Limits LimitsFor(int64_t max_y_dim) {
    Limits l;
    l.max_y_dim = max_y_dim;
    return l;
  }
  absl::Status Create(const std::string& family, int features, int classes, int x_dim, int y_dim) {
    v1::CreateSessionRequest req;
    v1::SessionSpec& spec = *req.mutable_spec();
    spec.mutable_family()->set_name(family);
    spec.mutable_family()->set_features(features);
    spec.mutable_family()->set_classes(classes);
    spec.mutable_family()->set_x_dim(x_dim);
    spec.mutable_family()->set_y_dim(y_dim);
    spec.set_algorithm("f2obo");
    spec.mutable_constraint()->set_unconstrained(true);
    return mgr_.Create(req).status();
  }

  MetricsPipeline pipeline_{1, 4, nullptr};
  SessionManager mgr_;
};

TEST_F(SessionLimitsTest, QuadraticXDimCountsTowardTheLimit) {
  // Was accepted (only y was bounded) and allocated 8 GiB for x.
  const absl::Status s = Create("quadratic", 0, 0, 1 << 30, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("max_y_dim"), std::string::npos) << s;
  EXPECT_EQ(Create("quadratic", 0, 0, 999, 1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Create("quadratic", 0, 0, 900, 90).ok());
  EXPECT_EQ(mgr_.size(), 1u);
}

TEST_F(SessionLimitsTest, IntMaxFeaturesDoNotOverflowTheBound) {
  // features + 1 overflowed int (undefined behavior; in practice a negative
  // bound that passed) before the 64-bit arithmetic.
  const absl::Status s = Create("ridge_hpo", INT_MAX, 0, 0, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(Create("logistic_hpo", INT_MAX, INT_MAX, 0, 0).code(),
            absl::StatusCode::kResourceExhausted);
}

TEST_F(SessionLimitsTest, NegativeFeaturesCannotHideAHugeYDim) {
  // (features + 1) * classes went negative and cancelled y_dim; quadratic
  // ignores features, so it allocated 16 GiB for y.
  const absl::Status s = Create("quadratic", INT_MIN, 1, 1, INT_MAX);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(Create("quadratic", -1000, 1000, 1, 5000).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(mgr_.size(), 0u);
}

// An imported reply cache may hold only applied steps: a reply for an index
// at or past the state's next one was served, marked replayed, for a step
// never applied (and shadowed the real reply of that index once applied).
TEST_F(SessionLimitsTest, ImportRefusesRepliesForStepsNotApplied) {
  ASSERT_TRUE(Create("quadratic", 0, 0, 2, 2).ok());
  ASSERT_EQ(mgr_.List().size(), 1u);
  absl::StatusOr<v1::SessionExport> ex = mgr_.Export(mgr_.List()[0].session_id());
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_EQ(ex->replies_size(), 0);
  v1::ImportSessionRequest req;
  req.set_session_id("copy");
  *req.mutable_session() = *ex;
  v1::StepReply* fake = req.mutable_session()->add_replies();
  fake->set_t(5);  // the state's next index is 1
  fake->add_x(42.0);
  absl::Status s = mgr_.Import(req).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("session.replies"), std::string::npos) << s;
  fake->set_t(1);  // the next index itself: not applied either
  EXPECT_EQ(mgr_.Import(req).status().code(), absl::StatusCode::kInvalidArgument);
  req.mutable_session()->clear_replies();
  EXPECT_TRUE(mgr_.Import(req).ok());
  // Without the fake reply, step 5 is refused, not "replayed".
  v1::StepRequest step;
  step.set_session_id("copy");
  step.set_t(5);
  EXPECT_EQ(mgr_.Step(step).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace f2obo::server
