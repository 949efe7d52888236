// Oracle families of the other problem classes over real gRPC: a
// multitask_oracle session (mt_f2obo) whose client answers each
// task with multitask_logistic_hpo's own math, and a simple_oracle session
// (ir_scg) answered with least_squares', follow the built-in sessions to
// 1e-12; what cannot work is refused naming why.  Bad opens, bad answers
// and kill -9: oracle_classes_faults_e2e_test.cc.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "f2obo/v1/convert.h"
#include "tests/server/e2e_support.h"
#include "tests/server/oracle_classes_support.h"
#include "tests/server/oracle_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::OracleClient;
using testing::OracleOutcome;
using testing::SimpleAnswerer;
using testing::TaskAnswerer;
using testing::oracle_classes::MaxDiff;
using testing::oracle_classes::MaxStateDiff;
using testing::oracle_classes::MultitaskFamily;
using testing::oracle_classes::MultitaskSpec;
using testing::oracle_classes::OracleClasses;
using testing::oracle_classes::OracleTwin;
using testing::oracle_classes::SimpleFamily;
using testing::oracle_classes::SimpleRequest;
using testing::oracle_classes::SimpleSpec;
using testing::oracle_classes::SimpleStep;
using testing::oracle_classes::TaskRequest;
using testing::oracle_classes::TaskStep;

// ---- equality with the built-in families

TEST_F(OracleClasses, MtF2oboFollowsTheBuiltInMultitaskFamily) {
  Start();
  CreatePair(MultitaskSpec());
  TaskAnswerer answerer(MultitaskFamily(), &TaskStep);
  OracleClient client(stub_.get());
  for (int64_t t = 1; t <= 12; ++t) {
    const v1::StepReply ref = BuiltInStep(TaskRequest("ref", t));
    const OracleOutcome out = client.Step("orc", t, &answerer);
    ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
    // Per task: one prequential f, K inner iterations, one hypergradient.
    EXPECT_EQ(out.requests, 2 * (1 + 3 + 1));
    EXPECT_LE(MaxDiff(out.reply->x(), ref.x()), 1e-12) << "t = " << t;
    EXPECT_NEAR(out.reply->report().upper_loss_before(), ref.report().upper_loss_before(), 1e-12);
    EXPECT_NEAR(out.reply->report().multitask().hypergradient_norm(),
                ref.report().multitask().hypergradient_norm(), 1e-12);
    EXPECT_EQ(out.reply->report().rows_processed(), ref.report().rows_processed());
    EXPECT_EQ(out.reply->report().multitask().tasks(), 2);
    EXPECT_EQ(out.reply->report().multitask().tasks_touched(),
              ref.report().multitask().tasks_touched());
    // Each task's y_i comes with `done`, in open.tasks' order.
    EXPECT_EQ(out.done->y_size(), 2);
  }
  EXPECT_TRUE(client.Close().ok());
  EXPECT_LE(MaxStateDiff(State("orc"), State("ref")), 1e-12);
}

TEST_F(OracleClasses, IrScgFollowsTheBuiltInSimpleFamily) {
  Start();
  CreatePair(SimpleSpec());
  SimpleAnswerer answerer(SimpleFamily(), &SimpleStep);
  OracleClient client(stub_.get());
  for (int64_t t = 1; t <= 15; ++t) {
    const v1::StepReply ref = BuiltInStep(SimpleRequest("ref", t));
    const OracleOutcome out = client.Step("orc", t, &answerer);
    ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
    EXPECT_LE(MaxDiff(out.reply->x(), ref.x()), 1e-12) << "t = " << t;
    const v1::SimpleRoundReport& a = out.reply->report().simple();
    const v1::SimpleRoundReport& b = ref.report().simple();
    EXPECT_NEAR(out.reply->report().upper_loss_before(), ref.report().upper_loss_before(), 1e-12);
    EXPECT_NEAR(a.inner_loss_before(), b.inner_loss_before(), 1e-12);
    EXPECT_NEAR(a.fw_gap_estimate(), b.fw_gap_estimate(), 1e-12);
    EXPECT_EQ(out.reply->report().rows_processed(), ref.report().rows_processed());
    EXPECT_EQ(out.done->y_size(), 0);  // x alone in this class
    // f and g at x_k, x_{k-1} and the decision: one request
    EXPECT_EQ(out.requests, 1) << "t = " << t;
  }
  EXPECT_TRUE(client.Close().ok());
  const v1::Decision a = Decision("orc"), b = Decision("ref");
  EXPECT_EQ(a.t(), 16);
  EXPECT_LE(MaxDiff(a.iterate(), b.iterate()), 1e-12);
  EXPECT_LE(MaxStateDiff(State("orc"), State("ref")), 1e-12);
}

// ---- what cannot work

TEST_F(OracleClasses, WhatTheClientCannotAnswerIsRefusedAtCreateNamingWhy) {
  Start();
  const v1::SessionInfo mt = Create("mt-ref", MultitaskSpec());
  const v1::SessionInfo simple = Create("simple-ref", SimpleSpec());
  const auto refuse = [&](const v1::SessionSpec& spec, const std::string& why) {
    v1::SessionInfo info;
    const grpc::Status s = TryCreate("refused", spec, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << why;
    EXPECT_THAT(s.error_message(), HasSubstr(why));
  };
  v1::SessionSpec spec = OracleTwin(MultitaskSpec(), mt);
  spec.set_algorithm("rsvrb");
  testing::KeepReadOptions(&spec);  // mt_f2obo's beta and inner_steps
  refuse(spec,
         "'rsvrb' needs Hessian-vector products, which family 'multitask_oracle' does "
         "not answer; it serves mt_f2obo");
  spec = OracleTwin(MultitaskSpec(), mt);
  spec.mutable_options()->set_beta_auto(true);
  refuse(spec, "options.alpha_auto, options.beta_auto: automatic step sizes");
  spec = OracleTwin(MultitaskSpec(), mt);
  spec.mutable_metrics()->set_exact_every(1);
  refuse(spec, "metrics.exact_every");
  for (const char* windowed : {"ir_fscg", "agm_bio"}) {
    spec = OracleTwin(SimpleSpec(windowed), simple);
    refuse(spec, absl::StrCat("'", windowed,
                              "' keeps rows of past steps in the session's state (its window, "
                              "options.window_rows), and family 'simple_oracle' keeps its rows "
                              "on the client; it serves ir_scg"));
  }
  spec = OracleTwin(SimpleSpec(), simple);
  spec.mutable_metrics()->set_exact_every(1);
  refuse(spec, "metrics.exact_every");
  spec = OracleTwin(SimpleSpec(), simple);
  spec.mutable_family()->set_x_dim(0);
  refuse(spec, "family.x_dim: family 'simple_oracle' needs d = dim x > 0");
  // IR-SCG's LMO stays on the server: a set without one is refused as for
  // any family of the class.
  spec = OracleTwin(SimpleSpec(), simple);
  spec.mutable_constraint()->Clear();
  spec.mutable_constraint()->set_unconstrained(true);
  refuse(spec, "linear minimization oracle");
}

// The simple class's default (agm_bio) keeps a window of rows,
// which an oracle session's server never holds; a spec that names no
// algorithm gets the class's oracle default there, and the class default
// for its built-in family.
TEST_F(OracleClasses, ASpecWithoutAnAlgorithmGetsTheDefaultItsFamilyCanRun) {
  Start();
  const v1::SessionInfo simple = Create("simple-ref", SimpleSpec());
  v1::SessionSpec built_in = SimpleSpec();
  built_in.clear_algorithm();
  EXPECT_EQ(Create("simple-default", built_in).spec().algorithm(), "agm_bio");
  v1::SessionSpec oracle = OracleTwin(SimpleSpec(), simple);
  oracle.clear_algorithm();
  EXPECT_EQ(Create("simple-oracle-default", oracle).spec().algorithm(), "ir_scg");
  const v1::SessionInfo mt = Create("mt-ref", MultitaskSpec());
  v1::SessionSpec mt_oracle = OracleTwin(MultitaskSpec(), mt);
  mt_oracle.clear_algorithm();
  EXPECT_EQ(Create("mt-oracle-default", mt_oracle).spec().algorithm(), "mt_f2obo");
}

}  // namespace
}  // namespace f2obo
