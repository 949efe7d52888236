// The multi-task e2e tests' shared pieces: the spec, a step's tagged
// batches, the core reference and the fixture (one server, one client).
#ifndef F2OBO_TESTS_SERVER_MULTITASK_E2E_FIXTURE_H_
#define F2OBO_TESTS_SERVER_MULTITASK_E2E_FIXTURE_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/e2e_client.h"
#include "tests/server/server_process.h"

namespace f2obo::multitask_e2e {

using ::testing::HasSubstr;
using testing::ServerProcess;
using ::testing::StartsWith;

constexpr int kTasks = 40, kFeatures = 3, kClasses = 2;

inline v1::SessionSpec MultitaskSpec(const std::string& algorithm, int exact_every = 0) {
  v1::SessionSpec spec;
  spec.set_problem_class("multitask_bilevel");
  spec.mutable_family()->set_name("multitask_logistic_hpo");
  spec.mutable_family()->set_features(kFeatures);
  spec.mutable_family()->set_classes(kClasses);
  spec.mutable_family()->set_tasks(kTasks);
  spec.mutable_family()->set_max_temperature(11.0);
  spec.set_algorithm(algorithm);
  if (algorithm == "rsvrb") spec.mutable_options()->set_sample_rows(8);  // mt_f2obo: unread
  spec.mutable_constraint()->mutable_box()->add_lo(0.0);
  spec.mutable_constraint()->mutable_box()->add_hi(0.1);
  spec.set_seed(17);
  spec.mutable_metrics()->set_exact_every(exact_every);
  return spec;
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

// The core library's state after `steps` steps of `spec`: what the server
// must hold, bit for bit.
inline Checkpoint CoreReference(const v1::SessionSpec& spec, int64_t steps) {
  std::unique_ptr<Session> s = *Session::Create(*ToSessionConfig(spec));
  for (int64_t t = 1; t <= steps; ++t) {
    const absl::StatusOr<StepReport> r = s->Step(TaskStep(t));
    EXPECT_TRUE(r.ok()) << r.status();
  }
  return Checkpoint{spec.family().name(), spec.algorithm(), s->state(), s->metrics()};
}

inline SessionState ServerState(client::Client& c, const std::string& id) {
  const v1::SessionExport ex = testing::ExportSession(c, id);
  return DeserializeCheckpoint(ex.state())->state;
}

class MultitaskE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>();
    ASSERT_TRUE(server_->started()) << server_->banner();
    client_ = std::make_unique<client::Client>(client::ClientOptions{server_->target()});
  }
  std::string Create(const std::string& id, const v1::SessionSpec& spec) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_spec() = spec;
    const absl::StatusOr<v1::SessionInfo> info = client_->CreateSession(req);
    EXPECT_TRUE(info.ok()) << info.status();
    return id;
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace f2obo::multitask_e2e

#endif  // F2OBO_TESTS_SERVER_MULTITASK_E2E_FIXTURE_H_
