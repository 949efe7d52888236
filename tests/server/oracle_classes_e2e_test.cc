// Oracle families of the other problem classes over real gRPC (issue 27
// item 2): a multitask_oracle session (mt_f2obo) whose client answers each
// task with multitask_logistic_hpo's own math, and a simple_oracle session
// (ir_scg) answered with least_squares', follow the built-in sessions to
// 1e-12; what cannot work is refused naming why; bad opens and bad answers
// change nothing; kill -9 loses no acknowledged step.
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/state.h"
#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/e2e_support.h"
#include "tests/server/oracle_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::OracleClient;
using testing::OracleOutcome;
using testing::ServerProcess;
using testing::SimpleAnswerer;
using testing::TaskAnswerer;

constexpr int kTasks = 6, kFeatures = 3, kClasses = 2;  // multi-task
constexpr int kSimpleFeatures = 10;                     // simple bilevel

// ---- the two classes' built-in sessions, their data and their oracle twins

v1::SessionSpec MultitaskSpec() {
  v1::SessionSpec spec;
  spec.set_problem_class("multitask_bilevel");
  spec.mutable_family()->set_name("multitask_logistic_hpo");
  spec.mutable_family()->set_features(kFeatures);
  spec.mutable_family()->set_classes(kClasses);
  spec.mutable_family()->set_tasks(kTasks);
  spec.mutable_family()->set_max_temperature(11.0);  // tempered tasks too
  spec.set_algorithm("mt_f2obo");
  // Given: the default (automatic) step sizes need HVPs.
  spec.mutable_options()->set_alpha(0.1);
  spec.mutable_options()->set_beta(0.5);
  spec.mutable_options()->set_inner_steps(3);
  spec.mutable_options()->set_task_momentum(0.9);
  spec.mutable_constraint()->mutable_box()->add_lo(0.0);
  spec.mutable_constraint()->mutable_box()->add_hi(0.1);
  spec.set_seed(17);
  spec.mutable_metrics()->set_exact_every(0);
  return spec;
}

FamilyConfig MultitaskFamily() {
  return testing::LogisticTasksFamily(kTasks, kFeatures, kClasses, 11.0);
}

// Step t's data: two distinct tasks, the same on every call.
StepData TaskStep(int64_t t) {
  std::mt19937_64 rng(1000 + t);
  const int a = static_cast<int>(rng() % kTasks);
  const int b = static_cast<int>((a + 1 + rng() % (kTasks - 1)) % kTasks);
  return testing::LogisticTasksStep({a, b}, kFeatures, kClasses, 12, rng);
}

v1::StepRequest TaskRequest(const std::string& id, int64_t t) {
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  for (const TaskData& task : TaskStep(t).tasks) ToProto(task, req.add_tasks());
  return req;
}

v1::SessionSpec SimpleSpec(const std::string& algorithm = "ir_scg") {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("least_squares");
  spec.mutable_family()->set_features(kSimpleFeatures);
  spec.set_algorithm(algorithm);
  spec.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  spec.set_seed(3);
  spec.mutable_metrics()->set_exact_every(0);
  return spec;
}

FamilyConfig SimpleFamily() {
  FamilyConfig f;
  f.name = "least_squares";
  f.features = kSimpleFeatures;
  return f;
}

// Step t's rows: 4 upper and 3 inner, the same on every call.
StepData SimpleStep(int64_t t) {
  std::mt19937_64 rng(2000 + t);
  std::normal_distribution<double> n(0.0, 1.0);
  StepData data;
  for (auto [batch, rows] : {std::pair{&data.upper, 4}, std::pair{&data.inner, 3}}) {
    batch->dense.resize(rows, kSimpleFeatures);
    for (int i = 0; i < rows; ++i) {
      for (int j = 0; j < kSimpleFeatures; ++j) batch->dense(i, j) = n(rng);
    }
    batch->targets.resize(rows);
    for (int i = 0; i < rows; ++i) batch->targets[i] = n(rng);
  }
  return data;
}

v1::StepRequest SimpleRequest(const std::string& id, int64_t t) {
  const StepData data = SimpleStep(t);
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  ToProto(data.upper, req.mutable_upper());
  ToProto(data.inner, req.mutable_inner());
  return req;
}

// The oracle twin of a built-in spec: the same, with the oracle family of
// the class and the built-in's dimensions.
v1::SessionSpec OracleTwin(v1::SessionSpec spec, const v1::SessionInfo& built_in) {
  const int tasks = spec.family().tasks();
  const bool simple = spec.family().name() == "least_squares";
  spec.mutable_family()->Clear();
  spec.mutable_family()->set_name(tasks > 0 ? "multitask_oracle"
                                            : (simple ? "simple_oracle" : "oracle"));
  spec.mutable_family()->set_tasks(tasks);
  spec.mutable_family()->set_x_dim(built_in.x_dim());
  if (!simple) spec.mutable_family()->set_y_dim(built_in.y_dim());
  spec.mutable_metrics()->clear_exact_every();
  return spec;
}

class OracleClasses : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> flags = {}, const std::string& dir = "") {
    server_ = std::make_unique<ServerProcess>(std::move(flags), dir);
    ASSERT_TRUE(server_->started()) << server_->banner();
    stub_ = v1::F2obo::NewStub(
        grpc::CreateChannel(server_->target(), grpc::InsecureChannelCredentials()));
  }

  grpc::Status TryCreate(const std::string& id, const v1::SessionSpec& spec,
                         v1::SessionInfo* info) {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_spec() = spec;
    return stub_->CreateSession(&ctx, req, info);
  }

  v1::SessionInfo Create(const std::string& id, const v1::SessionSpec& spec) {
    v1::SessionInfo info;
    const grpc::Status s = TryCreate(id, spec, &info);
    EXPECT_TRUE(s.ok()) << id << ": " << s.error_message();
    return info;
  }

  // The built-in session `ref` and its oracle twin `orc` (and, with
  // `twin_good`, a second twin "good" that no bad client touches).
  void CreatePair(const v1::SessionSpec& spec, bool twin_good = false) {
    const v1::SessionInfo ref = Create("ref", spec);
    Create("orc", OracleTwin(spec, ref));
    if (twin_good) Create("good", OracleTwin(spec, ref));
  }

  v1::StepReply BuiltInStep(const v1::StepRequest& req) {
    grpc::ClientContext ctx;
    v1::StepReply reply;
    const grpc::Status s = stub_->Step(&ctx, req, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return reply;
  }

  SessionState State(const std::string& id) {
    grpc::ClientContext ctx;
    v1::ExportSessionRequest req;
    req.set_session_id(id);
    v1::SessionExport ex;
    const grpc::Status s = stub_->ExportSession(&ctx, req, &ex);
    EXPECT_TRUE(s.ok()) << s.error_message();
    absl::StatusOr<Checkpoint> c = DeserializeCheckpoint(ex.state());
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? c->state : SessionState{};
  }

  v1::Decision Decision(const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetDecisionRequest req;
    req.set_session_id(id);
    v1::Decision d;
    EXPECT_TRUE(stub_->GetDecision(&ctx, req, &d).ok());
    return d;
  }

  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<v1::F2obo::Stub> stub_;
};

double MaxDiff(const google::protobuf::RepeatedField<double>& a,
               const google::protobuf::RepeatedField<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (int i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

double MaxDiff(const Vector& a, const Vector& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  return a.size() == 0 ? 0.0 : (a - b).cwiseAbs().maxCoeff();
}

// Every number of two states (x, the class's vectors and scalars, the
// algorithm's aux: the multi-task class keeps its task table there).
double MaxStateDiff(const SessionState& a, const SessionState& b) {
  EXPECT_EQ(a.t, b.t);
  double m = MaxDiff(a.x, b.x);
  EXPECT_EQ(a.vectors.size(), b.vectors.size());
  for (size_t i = 0; i < a.vectors.size() && i < b.vectors.size(); ++i) {
    m = std::max(m, MaxDiff(a.vectors[i], b.vectors[i]));
  }
  EXPECT_EQ(a.scalars.size(), b.scalars.size());
  for (size_t i = 0; i < a.scalars.size() && i < b.scalars.size(); ++i) {
    m = std::max(m, std::abs(a.scalars[i] - b.scalars[i]));
  }
  EXPECT_EQ(a.aux.size(), b.aux.size());
  for (size_t i = 0; i < a.aux.size() && i < b.aux.size(); ++i) {
    m = std::max(m, MaxDiff(a.aux[i], b.aux[i]));
  }
  return m;
}

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
    EXPECT_NEAR(out.reply->report().hypergradient_norm(), ref.report().hypergradient_norm(), 1e-12);
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

// Issue 29: the simple class's default (agm_bio) keeps a window of rows,
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

// ---- bad clients

TEST_F(OracleClasses, BadOpensAreRefusedNamingTheFieldAndChangeNothing) {
  Start();
  CreatePair(MultitaskSpec());
  const SessionState before = State("orc");
  TaskAnswerer answerer(MultitaskFamily(), &TaskStep);
  const auto refused = [&](const std::function<void(v1::OracleStepOpen*)>& hook,
                           const std::string& why) {
    OracleClient client(stub_.get());
    const OracleOutcome out = client.Step("orc", 1, &answerer, nullptr, hook);
    EXPECT_FALSE(out.reply.has_value()) << why;
    EXPECT_EQ(out.requests, 0) << why;
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << why;
    EXPECT_THAT(out.status.error_message(), HasSubstr(why));
  };
  refused([](v1::OracleStepOpen* o) { o->clear_tasks(); },
          "open.tasks: a multitask_oracle step lists its tasks");
  refused([](v1::OracleStepOpen* o) { o->set_upper_rows(5); },
          "open.upper_rows, open.inner_rows: a multitask_oracle step gives each task's rows");
  refused([](v1::OracleStepOpen* o) { o->mutable_tasks(1)->set_inner_rows(0); },
          "open.tasks[1].inner_rows: 0, must be in [1, ");
  refused([](v1::OracleStepOpen* o) { o->mutable_tasks(0)->set_task(kTasks); },
          "tasks[0].task: 6 is outside [0, m = 6)");
  refused([](v1::OracleStepOpen* o) { o->mutable_tasks(1)->set_task(o->tasks(0).task()); },
          "appears more than once in this step");
  refused([](v1::OracleStepOpen* o) { o->mutable_tasks(0)->set_probability(2.0); },
          "tasks[0].probability: 2 must be in (0, 1]");
  EXPECT_TRUE(State("orc").BitEquals(before));

  // Tasks in the open of a session without tasks.
  Create("simple", OracleTwin(SimpleSpec(), Create("simple-ref", SimpleSpec())));
  SimpleAnswerer simple(SimpleFamily(), &SimpleStep);
  OracleClient client(stub_.get());
  const OracleOutcome out = client.Step("simple", 1, &simple, nullptr,
                                        [](v1::OracleStepOpen* o) { o->add_tasks()->set_task(0); });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(out.status.error_message(),
              HasSubstr("open.tasks: session 'simple' of family 'simple_oracle' has no tasks"));

  // A good client then steps from the untouched start, on the built-in path.
  OracleClient good(stub_.get());
  const OracleOutcome ok = good.Step("orc", 1, &answerer);
  ASSERT_TRUE(ok.reply.has_value()) << ok.status.error_message();
  EXPECT_LE(MaxDiff(ok.reply->x(), BuiltInStep(TaskRequest("ref", 1)).x()), 1e-12);
}

// A bad answer in the second task's last request, after the first task's
// state was already worked on: the whole round is discarded.
TEST_F(OracleClasses, BadAnswersMidRoundOfEitherClassChangeNothing) {
  Start();
  CreatePair(MultitaskSpec(), /*twin_good=*/true);
  TaskAnswerer tasks(MultitaskFamily(), &TaskStep);
  const auto steps = [&](const std::string& id, int64_t from, int64_t to) {
    OracleClient client(stub_.get());
    for (int64_t t = from; t <= to; ++t) {
      ASSERT_TRUE(client.Step(id, t, &tasks).reply.has_value()) << id << " t = " << t;
    }
  };
  steps("orc", 1, 2);
  steps("good", 1, 2);
  constexpr int kLast = 2 * (1 + 3 + 1) - 1;  // the second task's hypergradient
  {
    OracleClient client(stub_.get());
    const OracleOutcome out = client.Step("orc", 3, &tasks, [](int index, v1::OracleAnswers* a) {
      if (index == kLast) a->mutable_answers(1)->mutable_grad_y()->resize(8 * 2);
      return true;
    });
    EXPECT_FALSE(out.reply.has_value());
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("answers[1].grad_y: 16 bytes, expected 8"));
  }
  EXPECT_TRUE(State("orc").BitEquals(State("good")));
  {  // a disconnect in the first task's inner loop
    OracleClient client(stub_.get());
    OracleClient* current = &client;
    const OracleOutcome out = client.Step("orc", 3, &tasks, [&](int index, v1::OracleAnswers*) {
      if (index != 3) return true;
      current->context()->TryCancel();
      return false;
    });
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::CANCELLED);
  }
  steps("orc", 3, 4);  // waits for the discarded round's lock: no sleep
  steps("good", 3, 4);
  EXPECT_TRUE(State("orc").BitEquals(State("good")));

  // The simple class: a NaN in ir_scg's STORM correction at x_{k-1}.
  const v1::SessionInfo s_ref = Create("s-ref", SimpleSpec());
  Create("s-orc", OracleTwin(SimpleSpec(), s_ref));
  Create("s-good", OracleTwin(SimpleSpec(), s_ref));
  SimpleAnswerer simple(SimpleFamily(), &SimpleStep);
  for (const char* id : {"s-orc", "s-good"}) {
    OracleClient client(stub_.get());
    for (int64_t t = 1; t <= 2; ++t) ASSERT_TRUE(client.Step(id, t, &simple).reply.has_value());
  }
  {
    OracleClient client(stub_.get());
    const OracleOutcome out = client.Step("s-orc", 3, &simple, [](int index, v1::OracleAnswers* a) {
      if (index == 3) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(a->mutable_answers(0)->mutable_grad_x()->data() + 8 * 4, &nan, 8);
      }
      return true;
    });
    EXPECT_FALSE(out.reply.has_value());
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(), HasSubstr("answers[0].grad_x[4]: nan is not finite"));
  }
  EXPECT_TRUE(State("s-orc").BitEquals(State("s-good")));
  for (const char* id : {"s-orc", "s-good"}) {
    OracleClient client(stub_.get());
    for (int64_t t = 3; t <= 4; ++t) ASSERT_TRUE(client.Step(id, t, &simple).reply.has_value());
  }
  EXPECT_TRUE(State("s-orc").BitEquals(State("s-good")));
}

// ---- durability

// kill -9 after three acknowledged steps of each class, a restart on the
// same data directory, and new clients continue at t = 4 on the built-in
// sessions' trajectories.
TEST_F(OracleClasses, KillNineLosesNoAcknowledgedStepOfEitherClass) {
  const std::string dir = testing::MakeTempDir();
  Start({}, dir);
  Create("mt-orc", OracleTwin(MultitaskSpec(), Create("mt-ref", MultitaskSpec())));
  Create("s-orc", OracleTwin(SimpleSpec(), Create("s-ref", SimpleSpec())));
  std::vector<v1::StepReply> mt_ref, s_ref;
  for (int64_t t = 1; t <= 6; ++t) {
    mt_ref.push_back(BuiltInStep(TaskRequest("mt-ref", t)));
    s_ref.push_back(BuiltInStep(SimpleRequest("s-ref", t)));
  }
  TaskAnswerer tasks(MultitaskFamily(), &TaskStep);
  SimpleAnswerer simple(SimpleFamily(), &SimpleStep);
  {
    OracleClient client(stub_.get());
    for (int64_t t = 1; t <= 3; ++t) {
      ASSERT_TRUE(client.Step("mt-orc", t, &tasks).reply.has_value());
      ASSERT_TRUE(client.Step("s-orc", t, &simple).reply.has_value());
    }
    server_->Stop(SIGKILL);
  }
  Start({}, dir);
  EXPECT_EQ(Decision("mt-orc").t(), 4);
  EXPECT_EQ(Decision("s-orc").t(), 4);
  OracleClient client(stub_.get());
  for (int64_t t = 4; t <= 6; ++t) {
    const OracleOutcome a = client.Step("mt-orc", t, &tasks);
    ASSERT_TRUE(a.reply.has_value()) << a.status.error_message();
    EXPECT_LE(MaxDiff(a.reply->x(), mt_ref[t - 1].x()), 1e-12) << "t = " << t;
    const OracleOutcome b = client.Step("s-orc", t, &simple);
    ASSERT_TRUE(b.reply.has_value()) << b.status.error_message();
    EXPECT_LE(MaxDiff(b.reply->x(), s_ref[t - 1].x()), 1e-12) << "t = " << t;
  }
  EXPECT_LE(MaxStateDiff(State("mt-orc"), State("mt-ref")), 1e-12);
  EXPECT_LE(MaxStateDiff(State("s-orc"), State("s-ref")), 1e-12);
}

}  // namespace
}  // namespace f2obo
