// The fixture and data of the oracle-family e2e tests of the multi-task
// and simple classes (oracle_classes_e2e_test.cc: equality with the
// built-in families and refusals; oracle_classes_faults_e2e_test.cc: bad
// clients and kill -9), one type for both files.
#ifndef F2OBO_TESTS_SERVER_ORACLE_CLASSES_SUPPORT_H_
#define F2OBO_TESTS_SERVER_ORACLE_CLASSES_SUPPORT_H_

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/state.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo::testing::oracle_classes {

inline constexpr int kTasks = 6, kFeatures = 3, kClasses = 2;  // multi-task
inline constexpr int kSimpleFeatures = 10;                     // simple bilevel

// ---- the two classes' built-in sessions, their data and their oracle twins

inline v1::SessionSpec MultitaskSpec() {
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

inline FamilyConfig MultitaskFamily() {
  return testing::LogisticTasksFamily(kTasks, kFeatures, kClasses, 11.0);
}

// Step t's data: two distinct tasks, the same on every call.
inline StepData TaskStep(int64_t t) {
  std::mt19937_64 rng(1000 + t);
  const int a = static_cast<int>(rng() % kTasks);
  const int b = static_cast<int>((a + 1 + rng() % (kTasks - 1)) % kTasks);
  return testing::LogisticTasksStep({a, b}, kFeatures, kClasses, 12, rng);
}

inline v1::StepRequest TaskRequest(const std::string& id, int64_t t) {
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  for (const TaskData& task : TaskStep(t).tasks) ToProto(task, req.add_tasks());
  return req;
}

inline v1::SessionSpec SimpleSpec(const std::string& algorithm = "ir_scg") {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("least_squares");
  spec.mutable_family()->set_features(kSimpleFeatures);
  spec.set_algorithm(algorithm);
  spec.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  spec.set_seed(3);
  spec.mutable_metrics()->set_exact_every(0);
  return spec;
}

inline FamilyConfig SimpleFamily() {
  FamilyConfig f;
  f.name = "least_squares";
  f.features = kSimpleFeatures;
  return f;
}

// Step t's rows: 4 upper and 3 inner, the same on every call.
inline StepData SimpleStep(int64_t t) {
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

inline v1::StepRequest SimpleRequest(const std::string& id, int64_t t) {
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
inline v1::SessionSpec OracleTwin(v1::SessionSpec spec, const v1::SessionInfo& built_in) {
  const int tasks = spec.family().tasks();
  const bool simple = spec.family().name() == "least_squares";
  spec.mutable_family()->Clear();
  spec.mutable_family()->set_name(tasks > 0 ? "multitask_oracle"
                                            : (simple ? "simple_oracle" : "oracle"));
  spec.mutable_family()->set_tasks(tasks);
  spec.mutable_family()->set_x_dim(built_in.x_dim());
  if (!simple) {
    spec.mutable_family()->set_y_dim(built_in.has_multitask() ? built_in.multitask().y_dim()
                                                              : built_in.bilevel().y_dim());
  }
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

inline double MaxDiff(const google::protobuf::RepeatedField<double>& a,
                      const google::protobuf::RepeatedField<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0.0;
  for (int i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline double MaxDiff(const Vector& a, const Vector& b) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  return a.size() == 0 ? 0.0 : (a - b).cwiseAbs().maxCoeff();
}

// Every number of two states (x, the class's vectors and scalars, the
// algorithm's aux: the multi-task class keeps its task table there).
inline double MaxStateDiff(const SessionState& a, const SessionState& b) {
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

}  // namespace f2obo::testing::oracle_classes

#endif  // F2OBO_TESTS_SERVER_ORACLE_CLASSES_SUPPORT_H_
