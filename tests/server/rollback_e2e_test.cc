// Checkpoints, RollbackSession and ForkSession end to end: the real server
// on loopback, states compared bit for bit with the core library's, a
// kill -9 and restart, and every bad request refused precisely without a
// change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/session.h"
#include "core/state.h"
#include "f2obo/v1/convert.h"
#include "tests/server/e2e_client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllAlgorithms;
using testing::AllFamilyCases;
using testing::CoreState;
using ::testing::ElementsAre;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

v1::SessionSpec NoMetrics(v1::SessionSpec spec) {
  spec.mutable_metrics()->set_exact_every(0);  // the running sums stay empty: states compare whole
  return spec;
}

// Step t's batches, poisoned: another step's rows with the upper batch's
// numbers scaled by 40 (valid input, wrong data).
v1::StepRequest PoisonedFor(const FamilyCase& f, const std::string& id, int64_t t) {
  v1::StepRequest req = RequestFor(f, id, t + 7919);
  req.set_t(t);
  v1::Batch& u = *req.mutable_upper();
  for (double& v : *u.mutable_c()) v *= 40;
  for (double& v : *u.mutable_d()) v *= 40;
  for (double& v : *u.mutable_targets()) v *= 40;
  return req;
}

absl::StatusOr<Checkpoint> ServerState(client::Client& c, const std::string& id) {
  grpc::Status status;
  const v1::SessionExport ex = testing::ExportSession(c, id, &status);
  if (!status.ok()) return absl::UnknownError(status.error_message());
  return DeserializeCheckpoint(ex.state());
}

std::vector<int64_t> Checkpoints(const v1::SessionInfo& info) {
  return {info.checkpoints().begin(), info.checkpoints().end()};
}

v1::CreateSessionRequest CreateRequest(const std::string& id, const v1::SessionSpec& spec) {
  v1::CreateSessionRequest req;
  req.set_session_id(id);
  *req.mutable_spec() = spec;
  return req;
}

// Steps first..last of session `id` with the clean batches.
void StepClean(client::Client& c, const FamilyCase& f, const std::string& id, int64_t first,
               int64_t last) {
  for (int64_t t = first; t <= last; ++t) {
    const absl::StatusOr<v1::StepReply> r = c.Step(RequestFor(f, id, t));
    ASSERT_TRUE(r.ok()) << id << " step " << t << ": " << r.status();
    ASSERT_FALSE(r->replayed()) << id << " step " << t;
  }
}

TEST(RollbackE2e, AfterAPoisonedStretchRollbackAndCleanStepsEqualANeverPoisonedSessionBitForBit) {
  ServerProcess server({"--checkpoint_every=5", "--max_checkpoints=3"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];  // quadratic
  for (const std::string& a : AllAlgorithms()) {
    SCOPED_TRACE(a);
    const std::string id = "p-" + a;
    const v1::SessionSpec spec = NoMetrics(SpecFor(f, a, 11));
    ASSERT_TRUE(c.CreateSession(CreateRequest(id, spec)).ok());
    StepClean(c, f, id, 1, 10);
    for (int64_t t = 11; t <= 17; ++t) {
      const absl::StatusOr<v1::StepReply> r = c.Step(PoisonedFor(f, id, t));
      ASSERT_TRUE(r.ok()) << "poisoned step " << t << ": " << r.status();
    }
    const absl::StatusOr<v1::SessionInfo> before = c.GetSession(id);
    ASSERT_TRUE(before.ok());
    EXPECT_THAT(Checkpoints(*before), ElementsAre(5, 10, 15));  // 0 fell out of the newest 3
    const absl::StatusOr<v1::SessionInfo> rolled = c.RollbackSession(id, 10);
    ASSERT_TRUE(rolled.ok()) << rolled.status();
    EXPECT_EQ(rolled->next_t(), 11);
    EXPECT_THAT(Checkpoints(*rolled), ElementsAre(5, 10));  // 15 held poisoned steps
    // The state is exactly the one before step 11 ...
    const absl::StatusOr<Checkpoint> at_10 = ServerState(c, id);
    const absl::StatusOr<Checkpoint> core_10 = CoreState(f, spec, 10);
    ASSERT_TRUE(at_10.ok() && core_10.ok());
    EXPECT_TRUE(at_10->BitEquals(*core_10)) << "the rolled-back state is not step 10's";
    // ... the reply cache keeps step 10 but not the poisoned 11..17: a
    // retried poisoned index is refused, not answered with a poisoned reply.
    const absl::StatusOr<v1::StepReply> retried = c.Step(RequestFor(f, id, 10));
    ASSERT_TRUE(retried.ok()) << retried.status();
    EXPECT_TRUE(retried->replayed());
    const absl::StatusOr<v1::StepReply> gone = c.Step(PoisonedFor(f, id, 13));
    EXPECT_EQ(gone.status().code(), absl::StatusCode::kFailedPrecondition) << gone.status();
    EXPECT_THAT(gone.status().message(), HasSubstr("expects t = 11"));
    // Clean steps from 11 on: the trajectory of a session that never saw
    // the poisoned stretch, bit for bit.
    StepClean(c, f, id, 11, 20);
    const absl::StatusOr<Checkpoint> at_20 = ServerState(c, id);
    const absl::StatusOr<Checkpoint> core_20 = CoreState(f, spec, 20);
    ASSERT_TRUE(at_20.ok() && core_20.ok());
    EXPECT_TRUE(at_20->BitEquals(*core_20)) << "rollback + clean steps differ from clean steps";
    EXPECT_THAT(Checkpoints(*c.GetSession(id)), ElementsAre(10, 15, 20));
  }
  const std::string metrics = testing::HttpGet(server.metrics_port(), "/metrics");
  EXPECT_THAT(metrics,
              HasSubstr("f2obo_rollbacks_total " + std::to_string(AllAlgorithms().size()) + "\n"));
}

// The reference of a fork that changes the algorithm: the core session of
// `spec` after `at` steps, continued under `algorithm` for steps at+1..last.
absl::StatusOr<Checkpoint> CoreFork(const FamilyCase& f, const v1::SessionSpec& spec, int64_t at,
                                    const v1::SessionSpec& fork_spec, int64_t last) {
  absl::StatusOr<Checkpoint> state = CoreState(f, spec, at);
  if (!state.ok()) return state.status();
  state->algorithm = fork_spec.algorithm();
  absl::StatusOr<std::unique_ptr<Session>> s =
      Session::Restore(*ToSessionConfig(fork_spec), *std::move(state));
  if (!s.ok()) return s.status();
  for (int64_t t = at + 1; t <= last; ++t) {
    const v1::StepRequest req = RequestFor(f, "", t);
    absl::Status st =
        (*s)->Step(StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")})
            .status();
    if (!st.ok()) return st;
  }
  return DeserializeCheckpoint((*s)->Encode((*s)->state()));
}

TEST(RollbackE2e, ForksContinueIndependentlyAndEverythingSurvivesKillNine) {
  const std::string dir = testing::MakeTempDir();
  const std::vector<std::string> flags = {"--checkpoint_every=4", "--max_checkpoints=5"};
  auto server = std::make_unique<ServerProcess>(flags, dir);
  ASSERT_TRUE(server->started()) << server->banner();
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo
  const v1::SessionSpec spec = NoMetrics(SpecFor(f, "aobo", 5));
  {
    client::Client c({server->target()});
    ASSERT_TRUE(c.CreateSession(CreateRequest("src", spec)).ok());
    StepClean(c, f, "src", 1, 10);
    // A fork of the checkpoint at 8 (same algorithm), one of the current
    // state with fsobo (aobo's v is fsobo's: same layout).
    v1::ForkSessionRequest fork;
    fork.set_session_id("src");
    fork.set_at_t(8);
    fork.set_new_session_id("src.same");
    const absl::StatusOr<v1::SessionInfo> same = c.ForkSession(fork);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(same->next_t(), 9);
    EXPECT_THAT(Checkpoints(*same), ElementsAre(8));  // where it starts
    EXPECT_EQ(same->spec().SerializeAsString(), c.GetSession("src")->spec().SerializeAsString());
    fork.clear_at_t();
    fork.set_new_session_id("src.fsobo");
    fork.set_algorithm("fsobo");
    fork.mutable_options()->set_gamma(0.01);
    const absl::StatusOr<v1::SessionInfo> other = c.ForkSession(fork);
    ASSERT_TRUE(other.ok()) << other.status();
    EXPECT_EQ(other->next_t(), 11);
    EXPECT_EQ(other->spec().algorithm(), "fsobo");
    // All three advance on their own.
    StepClean(c, f, "src", 11, 14);
    StepClean(c, f, "src.same", 9, 13);
    StepClean(c, f, "src.fsobo", 11, 12);
    ASSERT_TRUE(c.CheckpointSession("src.same").ok());
    // The source is rolled back; its forks are untouched.
    ASSERT_TRUE(c.RollbackSession("src", 12).ok());
    EXPECT_EQ(c.GetSession("src.same")->next_t(), 14);
    const std::string metrics = testing::HttpGet(server->metrics_port(), "/metrics");
    EXPECT_THAT(metrics, HasSubstr("f2obo_forks_total 2\n"));
    EXPECT_THAT(metrics, HasSubstr("f2obo_rollbacks_total 1\n"));
  }
  const std::string port = std::to_string(server->grpc_port());
  EXPECT_EQ(server->Stop(SIGKILL), 128 + SIGKILL);
  std::vector<std::string> restart = flags;
  restart.push_back("--listen=127.0.0.1:" + port);
  server = std::make_unique<ServerProcess>(restart, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  client::Client c({server->target()});
  const absl::StatusOr<v1::SessionInfo> src = c.GetSession("src");
  const absl::StatusOr<v1::SessionInfo> same = c.GetSession("src.same");
  const absl::StatusOr<v1::SessionInfo> other = c.GetSession("src.fsobo");
  ASSERT_TRUE(src.ok() && same.ok() && other.ok()) << server->Stderr();
  EXPECT_EQ(src->next_t(), 13);
  EXPECT_THAT(Checkpoints(*src), ElementsAre(0, 4, 8, 12));  // 12: written with step 12
  EXPECT_EQ(same->next_t(), 14);
  EXPECT_THAT(Checkpoints(*same), ElementsAre(8, 12, 13));  // start, every 4th, on demand
  EXPECT_EQ(other->next_t(), 13);
  // Each continues to step 20 and equals its core reference bit for bit.
  StepClean(c, f, "src", 13, 20);
  StepClean(c, f, "src.same", 14, 20);
  StepClean(c, f, "src.fsobo", 13, 20);
  const absl::StatusOr<Checkpoint> core = CoreState(f, spec, 20);
  v1::SessionSpec fsobo_spec = spec;
  fsobo_spec.set_algorithm("fsobo");
  fsobo_spec.clear_options();
  fsobo_spec.mutable_options()->set_gamma(0.01);
  const absl::StatusOr<Checkpoint> core_fsobo = CoreFork(f, spec, 10, fsobo_spec, 20);
  ASSERT_TRUE(core.ok() && core_fsobo.ok()) << core.status() << core_fsobo.status();
  EXPECT_TRUE(ServerState(c, "src")->BitEquals(*core));
  EXPECT_TRUE(ServerState(c, "src.same")->BitEquals(*core));
  EXPECT_TRUE(ServerState(c, "src.fsobo")->BitEquals(*core_fsobo));
  // And the kept checkpoints still restore after the restart.
  ASSERT_TRUE(c.RollbackSession("src", 8).ok());
  StepClean(c, f, "src", 9, 20);
  EXPECT_TRUE(ServerState(c, "src")->BitEquals(*core));
}

// Every bad request: its code, a message naming what is wrong, and no
// change (the states, the sessions, the checkpoints).
TEST(RollbackE2e, BadRequestsGetPreciseErrorsAndChangeNothing) {
  ServerProcess server({"--checkpoint_every=5"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  ASSERT_TRUE(c.CreateSession(CreateRequest("a", NoMetrics(SpecFor(f, "aobo", 2)))).ok());
  StepClean(c, f, "a", 1, 7);
  v1::CreateGroupRequest group;
  group.set_group_id("g");
  *group.mutable_spec() = SpecFor(f, "f2obo", 1);
  group.add_members()->set_name("m");
  ASSERT_TRUE(c.CreateGroup(group).ok());
  const v1::SessionExport before = testing::ExportSession(c, "a");
  const std::vector<int64_t> checkpoints_before = Checkpoints(*c.GetSession("a"));
  ASSERT_THAT(checkpoints_before, ElementsAre(0, 5));

  const auto expect = [](const absl::Status& s, absl::StatusCode code,
                         const std::vector<std::string>& says) {
    EXPECT_EQ(s.code(), code) << s;
    for (const std::string& part : says) EXPECT_THAT(s.message(), HasSubstr(part)) << s;
  };
  using Code = absl::StatusCode;
  expect(c.RollbackSession("nope", 0).status(), Code::kNotFound, {"session 'nope'"});
  expect(c.CheckpointSession("nope").status(), Code::kNotFound, {"session 'nope'"});
  expect(c.RollbackSession("a", 9).status(), Code::kFailedPrecondition,
         {"rollback to t = 9", "applied steps up to t = 7"});
  expect(c.RollbackSession("a", -1).status(), Code::kInvalidArgument, {"to_t: -1"});
  expect(c.RollbackSession("a", 3).status(), Code::kFailedPrecondition,
         {"no checkpoint there", "nearest: t = 0 before it and t = 5 after it", "kept: 0, 5"});
  expect(c.RollbackSession("g.m", 0).status(), Code::kFailedPrecondition, {"member of group 'g'"});

  v1::ForkSessionRequest fork;
  fork.set_session_id("nope");
  fork.set_new_session_id("b");
  expect(c.ForkSession(fork).status(), Code::kNotFound, {"session 'nope'"});
  fork.set_session_id("a");
  fork.set_new_session_id("g.m");
  expect(c.ForkSession(fork).status(), Code::kAlreadyExists, {"session 'g.m' already exists"});
  fork.set_new_session_id("bad id");
  expect(c.ForkSession(fork).status(), Code::kInvalidArgument, {"new_session_id"});
  fork.set_new_session_id("b");
  fork.set_at_t(6);
  expect(c.ForkSession(fork).status(), Code::kFailedPrecondition,
         {"fork at t = 6", "nearest: t = 5 before it"});
  fork.set_at_t(8);
  expect(c.ForkSession(fork).status(), Code::kFailedPrecondition, {"fork at t = 8"});
  fork.clear_at_t();
  fork.set_algorithm("ir_scg");  // a simple bilevel algorithm
  expect(c.ForkSession(fork).status(), Code::kInvalidArgument, {"algorithm: 'ir_scg'"});
  fork.set_algorithm("sogd");  // aux [v, m]: not aobo's [v]
  expect(c.ForkSession(fork).status(), Code::kInvalidArgument,
         {"algorithm: 'sogd' cannot continue the state of 'aobo' at t = 7", "state.aux"});
  fork.set_algorithm("f2obo");  // reads lambda, which aobo keeps at 0
  expect(c.ForkSession(fork).status(), Code::kInvalidArgument,
         {"algorithm: 'f2obo' cannot continue", "state.lambda"});
  fork.set_algorithm("");
  fork.mutable_options()->set_gamma(-1);
  expect(c.ForkSession(fork).status(), Code::kInvalidArgument, {"options.gamma"});

  // Nothing changed.
  EXPECT_EQ(testing::ExportSession(c, "a").SerializeAsString(), before.SerializeAsString());
  EXPECT_EQ(Checkpoints(*c.GetSession("a")), checkpoints_before);
  EXPECT_EQ(c.ListSessions()->sessions_size(), 2);  // a and g.m
  EXPECT_EQ(c.GetSession("g.m")->next_t(), 1);
  // A rollback to the current step changes nothing either, and succeeds.
  const absl::StatusOr<v1::SessionInfo> same = c.RollbackSession("a", 7);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(testing::ExportSession(c, "a").SerializeAsString(), before.SerializeAsString());
  EXPECT_THAT(testing::HttpGet(server.metrics_port(), "/metrics"),
              HasSubstr("f2obo_rollbacks_total 0\n"));
}

TEST(RollbackE2e, ARollbackEndsTheSessionsWatchersWithAborted) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[0];
  ASSERT_TRUE(c.CreateSession(CreateRequest("w", NoMetrics(SpecFor(f, "f2obo", 2)))).ok());
  StepClean(c, f, "w", 1, 3);
  v1::WatchMetricsRequest watch;
  watch.set_session_id("w");
  auto ctx = c.NewContext();
  auto reader = c.stub().WatchMetrics(ctx.get(), watch);
  v1::StepMetrics m;
  ASSERT_TRUE(reader->Read(&m));  // the watch is on
  EXPECT_EQ(m.t(), 1);
  ASSERT_TRUE(c.RollbackSession("w", 0).ok());
  while (reader->Read(&m)) {
  }
  const grpc::Status end = reader->Finish();
  EXPECT_EQ(end.error_code(), grpc::StatusCode::ABORTED) << end.error_message();
  EXPECT_THAT(end.error_message(), HasSubstr("rolled back"));
  // A new watch follows the steps applied anew.
  StepClean(c, f, "w", 1, 1);
  auto ctx2 = c.NewContext();
  auto again = c.stub().WatchMetrics(ctx2.get(), watch);
  ASSERT_TRUE(again->Read(&m));
  EXPECT_EQ(m.t(), 1);
  ctx2->TryCancel();
}

// Without a store the checkpoints are held in memory, and a session's
// reservation counts --max_checkpoints copies of its state (1.6 MB each
// here, beside the 5.6 MB of the session itself).
TEST(RollbackE2e, WithoutAStoreCheckpointsCountTowardTheMemoryBudget) {
  v1::CreateSessionRequest big;
  big.set_session_id("big");
  big.mutable_spec()->mutable_family()->set_name("quadratic");
  big.mutable_spec()->mutable_family()->set_x_dim(1);
  big.mutable_spec()->mutable_family()->set_y_dim(100000);
  for (const auto& [keep, fits] : {std::pair{"2", true}, std::pair{"3", false}}) {
    ServerProcess server({"--data_dir=", "--max_total_state_bytes=10000000",
                          std::string("--max_checkpoints=") + keep});
    ASSERT_TRUE(server.started()) << server.Stderr();
    client::Client c({server.target()});
    const absl::StatusOr<v1::SessionInfo> info = c.CreateSession(big);
    EXPECT_EQ(info.ok(), fits) << keep << " checkpoints: " << info.status();
    if (!fits) {
      EXPECT_EQ(info.status().code(), absl::StatusCode::kResourceExhausted);
      EXPECT_THAT(info.status().message(), HasSubstr("in-memory checkpoints"));
    }
  }
}

// The class-agnostic half: a simple bilevel session (its state is x, the
// decision and the algorithm's windows) rolls back and forks the same way.
TEST(RollbackE2e, ASimpleBilevelSessionRollsBackAndForksBitExact) {
  ServerProcess server({"--checkpoint_every=3"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("least_squares");
  spec.mutable_family()->set_features(4);
  spec.set_algorithm("ir_fscg");
  spec.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  spec.mutable_metrics()->set_exact_every(0);
  ASSERT_TRUE(c.CreateSession(CreateRequest("s", spec)).ok());
  const auto request = [](const std::string& id, int64_t t, double scale) {
    v1::StepRequest req;
    req.set_session_id(id);
    req.set_t(t);
    for (v1::Batch* b : {req.mutable_upper(), req.mutable_inner()}) {
      v1::DenseMatrix* m = b->mutable_dense();
      m->set_rows(2);
      m->set_cols(4);
      for (int i = 0; i < 8; ++i) m->add_values(std::sin(1.0 + i + 3.0 * t));
      for (int i = 0; i < 2; ++i) b->add_targets(scale * std::cos(i + 2.0 * t));
    }
    return req;
  };
  auto core = *Session::Create(*ToSessionConfig(spec));
  const auto core_step = [&](int64_t t) {
    const v1::StepRequest req = request("", t, 1.0);
    ASSERT_TRUE(
        core->Step(StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")}).ok());
  };
  for (int64_t t = 1; t <= 6; ++t) {
    ASSERT_TRUE(c.Step(request("s", t, 1.0)).ok());
    core_step(t);
  }
  for (int64_t t = 7; t <= 9; ++t) ASSERT_TRUE(c.Step(request("s", t, -30.0)).ok());
  ASSERT_TRUE(c.RollbackSession("s", 6).ok());
  v1::ForkSessionRequest fork;
  fork.set_session_id("s");
  fork.set_new_session_id("s.fork");
  ASSERT_TRUE(c.ForkSession(fork).ok());
  for (int64_t t = 7; t <= 12; ++t) {
    ASSERT_TRUE(c.Step(request("s", t, 1.0)).ok());
    ASSERT_TRUE(c.Step(request("s.fork", t, 1.0)).ok());
    core_step(t);
  }
  const absl::StatusOr<Checkpoint> expected = DeserializeCheckpoint(core->Encode(core->state()));
  ASSERT_TRUE(expected.ok());
  EXPECT_TRUE(ServerState(c, "s")->BitEquals(*expected));
  EXPECT_TRUE(ServerState(c, "s.fork")->BitEquals(*expected));
}

// WatchMetrics of `id` with until_t: the messages, and how the stream
// ended (a hang is a DEADLINE_EXCEEDED after 30 s).
std::vector<v1::StepMetrics> WatchUntil(client::Client& c, const std::string& id, int64_t until_t,
                                        grpc::Status* end) {
  v1::WatchMetricsRequest req;
  req.set_session_id(id);
  req.set_until_t(until_t);
  auto ctx = c.NewContext();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = c.stub().WatchMetrics(ctx.get(), req);
  std::vector<v1::StepMetrics> out;
  v1::StepMetrics m;
  while (reader->Read(&m)) out.push_back(m);
  *end = reader->Finish();
  return out;
}

std::vector<int64_t> Steps(const std::vector<v1::StepMetrics>& ms) {
  std::vector<int64_t> out;
  for (const v1::StepMetrics& m : ms) out.push_back(m.t());
  return out;
}

// A rollback keeps the metrics of the steps it keeps (it
// erased them all), a fork starts with its source's up to the fork point
// (it had none), and a watch up to a step ends there, also when the
// server holds no message of it (after a restart: it waited forever).
TEST(RollbackE2e, MetricsHistorySurvivesRollbackAndForkAndAWatchUntilAStepEnds) {
  const std::string dir = testing::MakeTempDir();
  const FamilyCase f = AllFamilyCases()[0];
  std::vector<v1::StepMetrics> before;
  {
    ServerProcess server({"--checkpoint_every=5"}, dir);
    ASSERT_TRUE(server.started()) << server.banner();
    client::Client c({server.target()});
    ASSERT_TRUE(c.CreateSession(CreateRequest("h", SpecFor(f, "f2obo", 2))).ok());
    StepClean(c, f, "h", 1, 12);
    grpc::Status end;
    before = WatchUntil(c, "h", 12, &end);
    ASSERT_TRUE(end.ok()) << end.error_message();
    ASSERT_EQ(Steps(before), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));

    ASSERT_TRUE(c.RollbackSession("h", 10).ok());
    const std::vector<v1::StepMetrics> kept = WatchUntil(c, "h", 10, &end);
    ASSERT_TRUE(end.ok()) << end.error_message();
    ASSERT_EQ(kept.size(), 10u);
    for (size_t i = 0; i < kept.size(); ++i) {
      EXPECT_EQ(kept[i].SerializeAsString(), before[i].SerializeAsString()) << "t = " << i + 1;
    }
    v1::ForkSessionRequest fork;
    fork.set_session_id("h");
    fork.set_new_session_id("h.fork");
    fork.set_at_t(5);
    ASSERT_TRUE(c.ForkSession(fork).ok());
    const std::vector<v1::StepMetrics> inherited = WatchUntil(c, "h.fork", 5, &end);
    ASSERT_TRUE(end.ok()) << end.error_message();
    ASSERT_EQ(Steps(inherited), (std::vector<int64_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(inherited[4].session_id(), "h.fork");
    EXPECT_EQ(inherited[4].exact().SerializeAsString(), before[4].exact().SerializeAsString());
    // Steps applied anew follow the history.
    StepClean(c, f, "h", 11, 11);
    EXPECT_EQ(Steps(WatchUntil(c, "h", 11, &end)).back(), 11);
    server.Stop(SIGKILL);
  }
  ServerProcess server({"--checkpoint_every=5"}, dir);
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  grpc::Status end;
  EXPECT_THAT(WatchUntil(c, "h", 11, &end), ::testing::IsEmpty());
  EXPECT_TRUE(end.ok()) << end.error_code() << ": " << end.error_message();
  // A step not applied yet is still waited for: this one comes.
  StepClean(c, f, "h", 12, 12);
  EXPECT_EQ(Steps(WatchUntil(c, "h", 12, &end)), (std::vector<int64_t>{12}));
  EXPECT_TRUE(end.ok()) << end.error_message();
}

}  // namespace
}  // namespace f2obo
