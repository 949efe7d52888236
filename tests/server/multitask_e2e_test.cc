// Multi-task sessions over real gRPC: create, stream tagged
// per-task batches (Steps), GetSession / GetDecision, export / import,
// kill -9 and resume mid-stream, groups comparing rsvrb with mt_f2obo, the
// per-task metrics, and bad input refused naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include "tests/server/multitask_e2e_fixture.h"

namespace f2obo {
namespace {

using namespace multitask_e2e;  // NOLINT: the fixture and its helpers

TEST_F(MultitaskE2e, StreamsTaggedBatchesAndMatchesTheCoreBitForBit) {
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    const std::string id = Create(std::string("mt-") + algorithm, MultitaskSpec(algorithm));
    auto ctx = client_->NewContext();
    auto stream = client_->stub().Steps(ctx.get());
    constexpr int kSteps = 25;
    for (int64_t t = 1; t <= kSteps; ++t) {
      ASSERT_TRUE(stream->Write(TaskRequest(id, t)));
      v1::StepReply reply;
      ASSERT_TRUE(stream->Read(&reply));
      EXPECT_EQ(reply.t(), t);
      EXPECT_EQ(reply.x_size(), kFeatures);
      EXPECT_EQ(reply.report().multitask().tasks(), 2);
      EXPECT_GT(reply.report().multitask().tasks_touched(), 0);
      // (rsvrb's d_t stays 0 until j_t draws a touched task.)
      if (std::string(algorithm) == "mt_f2obo") {
        EXPECT_GT(reply.report().multitask().hypergradient_norm(), 0);
      }
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());

    const Checkpoint expected = CoreReference(MultitaskSpec(algorithm), kSteps);
    EXPECT_TRUE(ServerState(*client_, id).BitEquals(expected.state)) << algorithm;
    const absl::StatusOr<v1::SessionInfo> info = client_->GetSession(id);
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->spec().problem_class(), "multitask_bilevel");
    EXPECT_EQ(info->spec().family().tasks(), kTasks);
    EXPECT_EQ(info->multitask().tasks(), kTasks);
    EXPECT_EQ(info->multitask().tasks_touched(), expected.state.aux[0][1]);  // {mark, touched}
    EXPECT_EQ(info->multitask().y_dim(), kFeatures * kClasses + kClasses);
    const absl::StatusOr<v1::Decision> d = client_->GetDecision(id);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->t(), kSteps + 1);
    ASSERT_EQ(d->x_size(), kFeatures);
    for (int j = 0; j < kFeatures; ++j) EXPECT_EQ(d->x(j), expected.state.x[j]);
  }
}

// RSVRB's decaying schedule set over the wire (rsvrb_decay, rsvrb_offset):
// each reply reports the round's gamma_t = gamma ((c0 + 1) / (c0 + t))^q,
// GetSession reports the options back, the server's state is the core's bit
// for bit and not the constant schedule's, and an out-of-range q is refused
// naming the field.
TEST_F(MultitaskE2e, TheDecayingScheduleRunsAsInTheCoreAndReportsItsSteps) {
  v1::SessionSpec spec = MultitaskSpec("rsvrb");
  spec.mutable_options()->set_gamma(0.01);
  spec.mutable_options()->set_rsvrb_decay(1.0 / 3.0);
  spec.mutable_options()->set_rsvrb_offset(4.0);
  const std::string id = Create("mt-decay", spec);
  constexpr int kSteps = 25;
  for (int64_t t = 1; t <= kSteps; ++t) {
    const absl::StatusOr<v1::StepReply> reply = client_->Step(TaskRequest(id, t));
    ASSERT_TRUE(reply.ok()) << reply.status();
    const double expected = 0.01 * std::cbrt(5.0 / (4.0 + static_cast<double>(t)));
    EXPECT_NEAR(reply->report().multitask().gamma(), expected, 1e-16) << "step " << t;
  }
  const absl::StatusOr<v1::SessionInfo> info = client_->GetSession(id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->spec().options().rsvrb_decay(), 1.0 / 3.0);
  EXPECT_EQ(info->spec().options().rsvrb_offset(), 4.0);
  const SessionState served = ServerState(*client_, id);
  EXPECT_TRUE(served.BitEquals(CoreReference(spec, kSteps).state));
  v1::SessionSpec constant = spec;
  constant.mutable_options()->set_rsvrb_decay(0.0);
  EXPECT_FALSE(served.BitEquals(CoreReference(constant, kSteps).state));

  v1::CreateSessionRequest bad;
  bad.set_session_id("mt-decay-bad");
  *bad.mutable_spec() = spec;
  bad.mutable_spec()->mutable_options()->set_rsvrb_decay(1.5);
  const absl::StatusOr<v1::SessionInfo> refused = client_->CreateSession(bad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("options.rsvrb_decay"));
  EXPECT_FALSE(client_->GetSession("mt-decay-bad").ok());
}

TEST_F(MultitaskE2e, ExportImportContinuesBitIdentically) {
  const std::string id = Create("mt-export", MultitaskSpec("rsvrb"));
  for (int64_t t = 1; t <= 10; ++t) ASSERT_TRUE(client_->Step(TaskRequest(id, t)).ok());
  grpc::Status status;
  const v1::SessionExport ex = testing::ExportSession(*client_, id, &status);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_TRUE(testing::ImportSession(*client_, "mt-imported", ex).ok());
  for (int64_t t = 11; t <= 20; ++t) {
    const auto a = client_->Step(TaskRequest(id, t));
    const auto b = client_->Step(TaskRequest("mt-imported", t));
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->x_size(), b->x_size());
    for (int j = 0; j < a->x_size(); ++j) EXPECT_EQ(a->x(j), b->x(j)) << "step " << t;
  }
  EXPECT_TRUE(ServerState(*client_, id).BitEquals(ServerState(*client_, "mt-imported")));
}

// An import whose constraint excludes its state's x is
// refused, as the simple class refuses it (every round projects x onto X,
// so such a state was not made by this spec), and nothing is created.
TEST_F(MultitaskE2e, AnImportWhoseConstraintExcludesItsXIsRefused) {
  for (const char* a : {"rsvrb", "mt_f2obo"}) {
    const std::string id = Create(std::string("mt-x-") + a, MultitaskSpec(a));
    for (int64_t t = 1; t <= 3; ++t) ASSERT_TRUE(client_->Step(TaskRequest(id, t)).ok()) << a;
    grpc::Status status;
    v1::SessionExport ex = testing::ExportSession(*client_, id, &status);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ex.mutable_spec()->mutable_constraint()->mutable_box()->set_lo(0, 5.0);  // x in [0, 0.1]
    ex.mutable_spec()->mutable_constraint()->mutable_box()->set_hi(0, 6.0);
    const grpc::Status refused = testing::ImportSession(*client_, "mt-outside", ex);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << a;
    EXPECT_THAT(refused.error_message(), HasSubstr("state.x: outside the constraint set X")) << a;
    EXPECT_EQ(client_->GetSession("mt-outside").status().code(), absl::StatusCode::kNotFound);
  }
}

// The write path of state in parts: a step stores its head and the parts it changed,
// the first step after a restart stores every part; kill -9 between them
// must lose nothing acknowledged, for both algorithms of the class.
TEST_F(MultitaskE2e, KillNineMidStreamResumesWhereTheLastAcknowledgedStepLeftIt) {
  for (const char* algorithm : {"rsvrb", "mt_f2obo"}) {
    const std::string dir = testing::MakeTempDir();
    auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
    ASSERT_TRUE(server->started());
    const std::string port = std::to_string(server->grpc_port());
    client::ClientOptions options{server->target()};
    options.max_attempts = 40;
    client::Client c(options);
    v1::CreateSessionRequest create;
    create.set_session_id("mt-crash");
    *create.mutable_spec() = MultitaskSpec(algorithm);
    ASSERT_TRUE(c.CreateSession(create).ok());
    constexpr int kSteps = 40;
    for (int64_t t = 1; t <= kSteps; ++t) {
      if (t == 17 || t == 18 || t == 31) {  // kill -9, restart on the same port and data
        server->Stop(SIGKILL);
        server = std::make_unique<ServerProcess>(
            std::vector<std::string>{"--listen=127.0.0.1:" + port}, dir);
        ASSERT_TRUE(server->started()) << server->Stderr();
      }
      // Step retries through the restart; the restored session expects t
      // (every acknowledged step survived, none is applied twice).
      const absl::StatusOr<v1::StepReply> reply = c.Step(TaskRequest("mt-crash", t));
      ASSERT_TRUE(reply.ok()) << algorithm << ": " << reply.status();
      EXPECT_EQ(reply->t(), t);
      EXPECT_FALSE(reply->replayed());
    }
    EXPECT_EQ(c.GetSession("mt-crash")->next_t(), kSteps + 1);
    EXPECT_TRUE(
        ServerState(c, "mt-crash").BitEquals(CoreReference(MultitaskSpec(algorithm), kSteps).state))
        << algorithm;
    server->Stop(SIGTERM);
  }
}

// Checkpoints in parts (each writes what changed since the
// previous one): a kill -9 inside the transaction of one that extends its
// predecessor loses only its unacknowledged step, and every checkpoint kept
// before and after the crash and a restart restores bit for bit.
TEST(MultitaskCheckpointsE2e, KillNineInsideACheckpointWriteLeavesEveryCheckpointRestorable) {
  const std::string dir = testing::MakeTempDir();
  const std::vector<std::string> flags = {"--checkpoint_every=3", "--max_checkpoints=4"};
  const v1::SessionSpec spec = MultitaskSpec("rsvrb");
  const auto checkpoints = [](const v1::SessionInfo& info) {
    return std::vector<int64_t>(info.checkpoints().begin(), info.checkpoints().end());
  };
  {
    // The creation's checkpoint (in parts) starts the chain; step 3's
    // extends it: killed there.
    testing::ScopedEnv crash("F2OBO_TEST_CRASH_AT", "checkpoint_delta_written:mt");
    ServerProcess server(flags, dir);
    ASSERT_TRUE(server.started()) << server.Stderr();
    client::ClientOptions options{server.target()};
    options.max_attempts = 1;  // the step that kills the server is not retried
    options.rpc_timeout_seconds = 10;
    client::Client c(options);
    v1::CreateSessionRequest create;
    create.set_session_id("mt");
    *create.mutable_spec() = spec;
    ASSERT_TRUE(c.CreateSession(create).ok());
    for (int64_t t = 1; t <= 2; ++t) ASSERT_TRUE(c.Step(TaskRequest("mt", t)).ok()) << t;
    EXPECT_FALSE(c.Step(TaskRequest("mt", 3)).ok());  // the server died
    EXPECT_NE(server.Stop(SIGKILL), 0);
  }
  auto server = std::make_unique<ServerProcess>(flags, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  {
    client::Client c({server->target()});
    const absl::StatusOr<v1::SessionInfo> info = c.GetSession("mt");
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->next_t(), 3);
    EXPECT_EQ(checkpoints(*info), (std::vector<int64_t>{0}));
    EXPECT_TRUE(ServerState(c, "mt").BitEquals(CoreReference(spec, 2).state));
    // A new chain from step 3 on (3, then 6, 9 and 12 extending it).
    for (int64_t t = 3; t <= 13; ++t) ASSERT_TRUE(c.Step(TaskRequest("mt", t)).ok()) << t;
    EXPECT_EQ(checkpoints(*c.GetSession("mt")), (std::vector<int64_t>{3, 6, 9, 12}));
  }
  server->Stop(SIGKILL);
  server = std::make_unique<ServerProcess>(flags, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  client::Client c({server->target()});
  EXPECT_TRUE(ServerState(c, "mt").BitEquals(CoreReference(spec, 13).state));
  v1::ForkSessionRequest fork;
  fork.set_session_id("mt");
  fork.set_at_t(9);
  fork.set_new_session_id("mt.9");
  ASSERT_TRUE(c.ForkSession(fork).ok());
  EXPECT_TRUE(ServerState(c, "mt.9").BitEquals(CoreReference(spec, 9).state));
  for (int64_t to : {12, 9, 6, 3}) {
    const absl::StatusOr<v1::SessionInfo> back = c.RollbackSession("mt", to);
    ASSERT_TRUE(back.ok()) << to << ": " << back.status();
    EXPECT_TRUE(ServerState(c, "mt").BitEquals(CoreReference(spec, to).state)) << to;
  }
  // And from 3 on the session steps to the same state as before.
  for (int64_t t = 4; t <= 13; ++t) ASSERT_TRUE(c.Step(TaskRequest("mt", t)).ok()) << t;
  EXPECT_TRUE(ServerState(c, "mt").BitEquals(CoreReference(spec, 13).state));
  EXPECT_EQ(checkpoints(*c.GetSession("mt")), (std::vector<int64_t>{3, 6, 9, 12}));
}

// A task probability whose weight 1/p is infinite was
// accepted; rsvrb refused the round and mt_f2obo applied it, so the
// group's members drifted apart.  It is refused up front, for both.
TEST_F(MultitaskE2e, AGroupStepWithAnUnusableProbabilityChangesNoMember) {
  v1::CreateGroupRequest req;
  req.set_group_id("mtp");
  *req.mutable_spec() = MultitaskSpec("rsvrb");
  for (const char* a : {"rsvrb", "mt_f2obo"}) {
    v1::GroupMember* m = req.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  ASSERT_TRUE(client_->CreateGroup(req).ok());
  v1::GroupStepRequest step;
  step.set_group_id("mtp");
  step.set_t(1);
  *step.mutable_tasks() = TaskRequest("", 1).tasks();
  step.mutable_tasks(0)->set_probability(5e-324);
  const absl::StatusOr<v1::GroupStepReply> refused = client_->StepGroup(step);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("tasks[0].probability"));
  for (const char* a : {"rsvrb", "mt_f2obo"}) {
    EXPECT_EQ(client_->GetSession(std::string("mtp.") + a)->next_t(), 1) << a;
  }
  step.mutable_tasks(0)->set_probability(0.0);  // the default k/m: both apply it
  const absl::StatusOr<v1::GroupStepReply> ok = client_->StepGroup(step);
  ASSERT_TRUE(ok.ok()) << ok.status();
  for (const v1::MemberStepResult& m : ok->members()) EXPECT_EQ(m.code(), 0) << m.message();
}

TEST_F(MultitaskE2e, GroupsCompareRsvrbWithTheFirstOrderRoundOnOneUpload) {
  v1::CreateGroupRequest req;
  req.set_group_id("mtg");
  *req.mutable_spec() = MultitaskSpec("rsvrb");
  for (const char* a : {"rsvrb", "mt_f2obo"}) {
    v1::GroupMember* m = req.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  ASSERT_TRUE(client_->CreateGroup(req).ok());
  for (int64_t t = 1; t <= 8; ++t) {
    v1::GroupStepRequest step;
    step.set_group_id("mtg");
    step.set_t(t);
    *step.mutable_tasks() = TaskRequest("", t).tasks();
    const absl::StatusOr<v1::GroupStepReply> r = client_->StepGroup(step);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->members_size(), 2);
    for (const v1::MemberStepResult& m : r->members()) {
      EXPECT_EQ(m.code(), 0) << m.message();
      EXPECT_EQ(m.reply().report().multitask().tasks(), 2);
    }
  }
  for (const char* a : {"rsvrb", "mt_f2obo"}) {
    v1::SessionSpec spec = MultitaskSpec(a);
    EXPECT_TRUE(
        ServerState(*client_, std::string("mtg.") + a).BitEquals(CoreReference(spec, 8).state))
        << a << " in the group runs as it would alone";
  }
}

TEST_F(MultitaskE2e, RefusesBadInputNamingTheField) {
  const std::string id = Create("mt-bad", MultitaskSpec("rsvrb"));
  ASSERT_TRUE(client_->Step(TaskRequest(id, 1)).ok());
  const auto expect = [&](const v1::StepRequest& req, absl::StatusCode code,
                          const std::string& prefix) {
    const absl::StatusOr<v1::StepReply> r = client_->Step(req);
    ASSERT_FALSE(r.ok()) << prefix;
    EXPECT_EQ(r.status().code(), code) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(prefix));
  };
  v1::StepRequest req = TaskRequest(id, 2);
  req.mutable_tasks(1)->set_task(kTasks);
  expect(req, absl::StatusCode::kInvalidArgument, "tasks[1].task: 40 is outside [0, m = 40)");
  req = TaskRequest(id, 2);
  req.mutable_tasks(0)->mutable_inner()->mutable_dense()->set_values(4, std::nan(""));
  expect(req, absl::StatusCode::kInvalidArgument, "tasks[0].inner.dense.values[4]");
  req = TaskRequest(id, 2);
  req.mutable_tasks(1)->mutable_upper()->mutable_dense()->set_cols(kFeatures + 1);
  expect(req, absl::StatusCode::kInvalidArgument, "tasks[1].upper.dense");
  req = TaskRequest(id, 2);
  req.clear_tasks();
  expect(req, absl::StatusCode::kInvalidArgument, "tasks: a multitask_bilevel step carries");
  // The step index did not move.
  EXPECT_EQ(client_->GetSession(id)->next_t(), 2);
  ASSERT_TRUE(client_->Step(TaskRequest(id, 2)).ok());

  // A bilevel session refuses tagged batches.
  v1::SessionSpec bilevel;
  bilevel.mutable_family()->set_name("quadratic");
  bilevel.mutable_family()->set_x_dim(2);
  bilevel.mutable_family()->set_y_dim(2);
  Create("bilevel", bilevel);
  v1::StepRequest tagged = TaskRequest("bilevel", 1);
  expect(tagged, absl::StatusCode::kInvalidArgument, "tasks: a bilevel session reads");

  // More tasks than the server allows.
  v1::CreateSessionRequest huge;
  huge.set_session_id("huge");
  *huge.mutable_spec() = MultitaskSpec("rsvrb");
  huge.mutable_spec()->mutable_family()->set_tasks(10001);
  const absl::StatusOr<v1::SessionInfo> refused = client_->CreateSession(huge);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.status().message()), StartsWith("spec.family.tasks"));
}

TEST(MultitaskE2eLimits, EveryTasksBatchIsHeldToTheBatchLimits) {
  ServerProcess server({"--max_batch_rows=10"});
  ASSERT_TRUE(server.started());
  client::Client c(client::ClientOptions{server.target()});
  v1::CreateSessionRequest create;
  create.set_session_id("mt");
  *create.mutable_spec() = MultitaskSpec("mt_f2obo");
  ASSERT_TRUE(c.CreateSession(create).ok());
  const absl::StatusOr<v1::StepReply> r = c.Step(TaskRequest("mt", 1));  // 12 rows per batch
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), StartsWith("tasks[0].upper: 12 rows"));
}

}  // namespace
}  // namespace f2obo
