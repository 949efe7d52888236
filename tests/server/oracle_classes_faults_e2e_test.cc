// Oracle families of the other problem classes over real gRPC, their
// faults: bad opens and bad answers of either class change
// nothing; kill -9 loses no acknowledged step.  The fixture and data:
// oracle_classes_support.h.
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
using testing::oracle_classes::kTasks;
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

  // The simple class: a NaN in ir_scg's STORM correction at x_{k-1} (the
  // step's one request; its second query is f's gradient there).
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
      if (index == 0) {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(a->mutable_answers(1)->mutable_grad_x()->data() + 8 * 4, &nan, 8);
      }
      return true;
    });
    EXPECT_FALSE(out.reply.has_value());
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(out.status.error_message(),
                HasSubstr("answers[1].grad_x[4]: nan is not finite (f's gradient in x"));
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
