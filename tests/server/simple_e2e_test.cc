// The simple bilevel class end to end: the real f2obo-server on loopback,
// every algorithm of the class created, streamed and read over gRPC, a
// group comparing them on one stream, a kill -9 mid-stream, bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "core/problem_registry.h"
#include "core/session.h"
#include "core/state.h"
#include "f2obo/v1/convert.h"
#include "tests/core/simple/simple_test_util.h"
#include "tests/server/e2e_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr int kFeatures = 10;

v1::SessionSpec LeastSquaresSpec(const std::string& algorithm) {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("least_squares");
  spec.mutable_family()->set_features(kFeatures);
  spec.set_algorithm(algorithm);
  spec.mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  spec.set_seed(3);
  return spec;
}

// Step t's rows, identical on every call: 4 upper and 3 inner rows (an
// over-parameterized inner problem: fewer rows than features at first).
v1::StepRequest StepRequestFor(const std::string& session, int64_t t) {
  std::mt19937_64 rng(1000 + t);
  std::normal_distribution<double> n(0.0, 1.0);
  v1::StepRequest req;
  req.set_session_id(session);
  req.set_t(t);
  for (auto [batch, rows] :
       {std::pair{req.mutable_upper(), 4}, std::pair{req.mutable_inner(), 3}}) {
    v1::DenseMatrix* m = batch->mutable_dense();
    m->set_rows(rows);
    m->set_cols(kFeatures);
    for (int i = 0; i < rows * kFeatures; ++i) m->add_values(n(rng));
    for (int i = 0; i < rows; ++i) batch->add_targets(n(rng));
  }
  return req;
}

StepData DataOf(const v1::StepRequest& req) {
  return StepData{*ToBatch(req.upper(), "upper"), *ToBatch(req.inner(), "inner")};
}

std::vector<double> Vec(const google::protobuf::RepeatedField<double>& v) {
  return std::vector<double>(v.begin(), v.end());
}
std::vector<double> Vec(const Vector& v) {
  return std::vector<double>(v.data(), v.data() + v.size());
}

std::vector<std::string> Algorithms() { return AlgorithmNames(ProblemClass::kSimpleBilevel); }

TEST(SimpleE2e, EveryAlgorithmStreamsAndMatchesTheCoreBitForBit) {
  ServerProcess server({"--metrics_threads=2"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  ASSERT_EQ(Algorithms().size(), 3u);
  for (const std::string& a : Algorithms()) {
    v1::CreateSessionRequest create;
    create.set_session_id("s-" + a);
    *create.mutable_spec() = LeastSquaresSpec(a);
    const absl::StatusOr<v1::SessionInfo> info = c.CreateSession(create);
    ASSERT_TRUE(info.ok()) << a << ": " << info.status();
    EXPECT_EQ(info->spec().problem_class(), "simple_bilevel");
    EXPECT_EQ(info->x_dim(), kFeatures);
    auto core = *Session::Create(*ToSessionConfig(info->spec()));
    constexpr int kSteps = 25;
    auto ctx = c.NewContext();
    auto stream = c.stub().Steps(ctx.get());
    for (int t = 1; t <= kSteps; ++t) {
      const v1::StepRequest req = StepRequestFor(create.session_id(), t);
      ASSERT_TRUE(core->Step(DataOf(req)).ok());
      v1::StepReply reply;
      if (t % 2 == 0) {  // alternate the unary and the streaming RPC
        const absl::StatusOr<v1::StepReply> r = c.Step(req);
        ASSERT_TRUE(r.ok()) << a << " step " << t << ": " << r.status();
        reply = *r;
      } else {
        ASSERT_TRUE(stream->Write(req));
        ASSERT_TRUE(stream->Read(&reply));
      }
      ASSERT_EQ(reply.t(), t);
      ASSERT_TRUE(reply.report().has_simple()) << a;
      ASSERT_EQ(Vec(reply.x()), Vec(core->decision())) << a << " diverged at t = " << t;
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    const absl::StatusOr<v1::Decision> d = c.GetDecision(create.session_id());
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(d->t(), kSteps + 1);
    EXPECT_EQ(Vec(d->x()), Vec(core->decision()));
    EXPECT_EQ(Vec(d->iterate()), Vec(core->state().x));

    // The class's metrics arrive on WatchMetrics for every step.
    v1::WatchMetricsRequest watch;
    watch.set_session_id(create.session_id());
    auto wctx = c.NewContext();
    auto reader = c.stub().WatchMetrics(wctx.get(), watch);
    v1::StepMetrics m;
    int with_gaps = 0;
    while (with_gaps < kSteps && reader->Read(&m)) {
      if (!m.has_exact()) continue;
      ++with_gaps;
      ASSERT_TRUE(m.exact().has_simple()) << a;
      const v1::SimpleExactMetrics& e = m.exact().simple();
      EXPECT_GE(e.inner_gap(), 0.0);
      ASSERT_TRUE(e.has_fw_gap());  // the l1 ball has an LMO
      EXPECT_LE(e.inner_gap(), e.fw_gap() + 1e-9) << a << " t = " << m.t();
    }
    wctx->TryCancel();
    EXPECT_EQ(with_gaps, kSteps) << a;
    const absl::StatusOr<v1::SessionInfo> after = c.GetSession(create.session_id());
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->metrics().evaluated_steps(), kSteps);
    EXPECT_GT(after->metrics().simple().inner_gap_sum(), 0.0);
  }
  // Prometheus names say which class the gauges belong to.
  const std::string text = testing::HttpGet(server.metrics_port(), "/metrics");
  EXPECT_NE(text.find("f2obo_simple_session_inner_gap{session_id=\"s-ir_scg\"}"),
            std::string::npos);
}

TEST(SimpleE2e, AGroupComparesTheThreeAlgorithmsOnOneStream) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  v1::CreateGroupRequest create;
  create.set_group_id("cmp");
  *create.mutable_spec() = LeastSquaresSpec("ir_scg");
  for (const std::string& a : Algorithms()) {
    v1::GroupMember* m = create.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  const absl::StatusOr<v1::GroupInfo> info = c.CreateGroup(create);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(info->members_size(), 3);
  std::vector<std::unique_ptr<Session>> lone;
  for (const v1::SessionInfo& m : info->members()) {
    lone.push_back(*Session::Create(*ToSessionConfig(m.spec())));
  }
  for (int t = 1; t <= 15; ++t) {
    const v1::StepRequest single = StepRequestFor("", t);
    v1::GroupStepRequest req;
    req.set_group_id("cmp");
    req.set_t(t);
    *req.mutable_upper() = single.upper();
    *req.mutable_inner() = single.inner();
    const absl::StatusOr<v1::GroupStepReply> reply = c.StepGroup(req);
    ASSERT_TRUE(reply.ok()) << reply.status();
    ASSERT_EQ(reply->members_size(), 3);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(lone[i]->Step(DataOf(single)).ok());
      ASSERT_EQ(reply->members(i).code(), 0) << reply->members(i).message();
      ASSERT_EQ(Vec(reply->members(i).reply().x()), Vec(lone[i]->decision()))
          << info->members(i).spec().algorithm() << " at t = " << t;
    }
  }
}

TEST(SimpleE2e, KillNineMidStreamResumesTheSameTrajectory) {
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started());
  const std::string port = std::to_string(server->grpc_port());
  for (const std::string& a : Algorithms()) {
    client::Client c({server->target()});
    v1::CreateSessionRequest create;
    create.set_session_id("k-" + a);
    *create.mutable_spec() = LeastSquaresSpec(a);
    create.mutable_spec()->mutable_metrics()->set_exact_every(0);
    ASSERT_TRUE(c.CreateSession(create).ok());
    for (int t = 1; t <= 12; ++t) ASSERT_TRUE(c.Step(StepRequestFor(create.session_id(), t)).ok());
  }
  server->Stop(SIGKILL);
  server =
      std::make_unique<ServerProcess>(std::vector<std::string>{"--listen=127.0.0.1:" + port}, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  client::Client c({server->target()});
  for (const std::string& a : Algorithms()) {
    const std::string id = "k-" + a;
    const absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    ASSERT_TRUE(info.ok()) << a << ": " << info.status();
    ASSERT_EQ(info->next_t(), 13) << a << ": an acknowledged step was lost";
    auto core = *Session::Create(*ToSessionConfig(info->spec()));
    v1::StepReply last;
    for (int t = 1; t <= 24; ++t) {
      const v1::StepRequest req = StepRequestFor(id, t);
      ASSERT_TRUE(core->Step(DataOf(req)).ok());
      if (t <= 12) continue;
      const absl::StatusOr<v1::StepReply> r = c.Step(req);
      ASSERT_TRUE(r.ok()) << a << " step " << t << ": " << r.status();
      last = *r;
    }
    EXPECT_EQ(Vec(last.x()), Vec(core->decision())) << a;
  }
}

// The windows of ir_fscg and agm_bio are kept as segment
// parts, and a step writes its rows' segments, empties the ones it evicts
// and trims the slots after the last one in use.  With windows of 10 rows
// (4 upper and 3 inner rows a step) every step from the third evicts, the
// slots are reused and trimmed; a kill -9 after step 12, and again after
// step 19 mid-stream, resumes bit for bit with a core session that never
// stopped.
TEST(SimpleE2e, KillNineWithWrappingWindowsResumesTheSameTrajectory) {
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started());
  const std::string port = std::to_string(server->grpc_port());
  const std::vector<std::string> windowed = {"ir_fscg", "agm_bio"};
  for (const std::string& a : windowed) {
    client::Client c({server->target()});
    v1::CreateSessionRequest create;
    create.set_session_id("w-" + a);
    *create.mutable_spec() = LeastSquaresSpec(a);
    create.mutable_spec()->mutable_options()->set_window_rows(10);
    create.mutable_spec()->mutable_metrics()->set_exact_every(0);
    ASSERT_TRUE(c.CreateSession(create).ok());
    for (int t = 1; t <= 12; ++t) ASSERT_TRUE(c.Step(StepRequestFor(create.session_id(), t)).ok());
  }
  for (const int stop : {12, 19}) {
    server->Stop(SIGKILL);
    server = std::make_unique<ServerProcess>(std::vector<std::string>{"--listen=127.0.0.1:" + port},
                                             dir);
    ASSERT_TRUE(server->started()) << server->Stderr();
    client::Client c({server->target()});
    for (const std::string& a : windowed) {
      const std::string id = "w-" + a;
      const absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
      ASSERT_TRUE(info.ok()) << a << ": " << info.status();
      ASSERT_EQ(info->next_t(), stop + 1) << a << ": an acknowledged step was lost";
      auto core = *Session::Create(*ToSessionConfig(info->spec()));
      v1::StepReply last;
      const int until = stop == 12 ? 19 : 30;
      for (int t = 1; t <= until; ++t) {
        const v1::StepRequest req = StepRequestFor(id, t);
        ASSERT_TRUE(core->Step(DataOf(req)).ok());
        if (t <= stop) continue;
        const absl::StatusOr<v1::StepReply> r = c.Step(req);
        ASSERT_TRUE(r.ok()) << a << " step " << t << ": " << r.status();
        last = *r;
      }
      EXPECT_EQ(Vec(last.x()), Vec(core->decision())) << a << " after the kill at " << stop;
    }
  }
}

// agm_bio's horizon defaults to 0, a stream of unknown length
// (epochs of K = 1000, 2000, ...; core/simple/algorithms/agm_bio.cc).  Over
// the wire: a session created without options says so in its spec, runs
// the K = 1000 trajectory for 1000 steps and restarts at step 1001 (the
// epoch follows from t alone), and after a kill -9 past the restart it
// resumes the core's trajectory; a horizon given is kept.
TEST(SimpleE2e, AgmBioRestartsWithADoubledHorizonByDefaultAndAcrossAKill) {
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started());
  const std::string port = std::to_string(server->grpc_port());
  std::vector<std::unique_ptr<Session>> core;
  for (const int horizon : {0, 1000}) {
    client::Client c({server->target()});
    v1::CreateSessionRequest create;
    create.set_session_id("k" + std::to_string(horizon));
    *create.mutable_spec() = LeastSquaresSpec("agm_bio");
    create.mutable_spec()->mutable_options()->set_window_rows(10);
    if (horizon > 0) create.mutable_spec()->mutable_options()->set_agm_horizon(horizon);
    create.mutable_spec()->mutable_metrics()->set_exact_every(0);
    const absl::StatusOr<v1::SessionInfo> info = c.CreateSession(create);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_TRUE(info->spec().options().has_agm_horizon());
    EXPECT_EQ(info->spec().options().agm_horizon(), horizon);
    core.push_back(*Session::Create(*ToSessionConfig(info->spec())));
  }
  {
    client::Client c({server->target()});
    auto ctx = c.NewContext();
    auto stream = c.stub().Steps(ctx.get());
    for (int t = 1; t <= 1002; ++t) {
      std::vector<double> x[2];
      for (int i = 0; i < 2; ++i) {
        const v1::StepRequest req = StepRequestFor(i == 0 ? "k0" : "k1000", t);
        ASSERT_TRUE(core[i]->Step(DataOf(req)).ok());
        v1::StepReply reply;
        ASSERT_TRUE(stream->Write(req));
        ASSERT_TRUE(stream->Read(&reply));
        ASSERT_EQ(reply.t(), t) << reply.DebugString();
        x[i] = Vec(reply.x());
        ASSERT_EQ(x[i], Vec(core[i]->decision())) << "t = " << t;
      }
      if (t <= 1000) {
        ASSERT_EQ(x[0], x[1]) << "the first epoch is the K = 1000 run; t = " << t;
      } else {
        EXPECT_NE(x[0], x[1]) << "no restart at t = " << t;
      }
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  server->Stop(SIGKILL);
  server =
      std::make_unique<ServerProcess>(std::vector<std::string>{"--listen=127.0.0.1:" + port}, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  client::Client c({server->target()});
  for (int i = 0; i < 2; ++i) {
    const std::string id = i == 0 ? "k0" : "k1000";
    const absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    ASSERT_TRUE(info.ok()) << info.status();
    ASSERT_EQ(info->next_t(), 1003);
    EXPECT_EQ(info->spec().options().agm_horizon(), i == 0 ? 0 : 1000);
    for (int t = 1003; t <= 1006; ++t) {
      const v1::StepRequest req = StepRequestFor(id, t);
      ASSERT_TRUE(core[i]->Step(DataOf(req)).ok());
      const absl::StatusOr<v1::StepReply> r = c.Step(req);
      ASSERT_TRUE(r.ok()) << id << " t = " << t << ": " << r.status();
      ASSERT_EQ(Vec(r->x()), Vec(core[i]->decision())) << id << " t = " << t;
    }
  }
}

// A session exported by a server from before the window
// segments' padding (window layout version 2, stream_windows.h) imports
// into this one, upgraded, and resumes bit for bit with a core session that
// never stopped, across a kill -9 (the store must then hold the upgraded
// state, not the old segments with the new steps' changes on top).
TEST(SimpleE2e, ASessionExportedInWindowLayoutVersion2ResumesAcrossAKill) {
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started());
  const std::string port = std::to_string(server->grpc_port());
  const std::vector<std::string> windowed = {"ir_fscg", "agm_bio"};
  for (const std::string& a : windowed) {
    client::Client c({server->target()});
    v1::CreateSessionRequest create;
    create.set_session_id("new-" + a);
    *create.mutable_spec() = LeastSquaresSpec(a);
    create.mutable_spec()->mutable_options()->set_window_rows(10);
    create.mutable_spec()->mutable_metrics()->set_exact_every(0);
    ASSERT_TRUE(c.CreateSession(create).ok());
    for (int t = 1; t <= 12; ++t) ASSERT_TRUE(c.Step(StepRequestFor(create.session_id(), t)).ok());
    grpc::Status exported;
    v1::SessionExport ex = testing::ExportSession(c, create.session_id(), &exported);
    ASSERT_TRUE(exported.ok()) << exported.error_message();
    absl::StatusOr<Checkpoint> cp = DeserializeCheckpoint(ex.state());
    ASSERT_TRUE(cp.ok()) << cp.status();
    ASSERT_TRUE(testing::ToWindowLayoutVersion2(&cp->state.aux, a == "ir_fscg" ? 5 : 4)) << a;
    ex.set_state(SerializeCheckpoint(*cp));
    const grpc::Status imported = testing::ImportSession(c, "old-" + a, ex);
    ASSERT_TRUE(imported.ok()) << a << ": " << imported.error_message();
    for (int t = 13; t <= 16; ++t) ASSERT_TRUE(c.Step(StepRequestFor("old-" + a, t)).ok());
  }
  server->Stop(SIGKILL);
  server =
      std::make_unique<ServerProcess>(std::vector<std::string>{"--listen=127.0.0.1:" + port}, dir);
  ASSERT_TRUE(server->started()) << server->Stderr();
  client::Client c({server->target()});
  for (const std::string& a : windowed) {
    const std::string id = "old-" + a;
    const absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    ASSERT_TRUE(info.ok()) << a << ": " << info.status();
    ASSERT_EQ(info->next_t(), 17) << a;
    auto core = *Session::Create(*ToSessionConfig(info->spec()));
    v1::StepReply last;
    for (int t = 1; t <= 24; ++t) {
      const v1::StepRequest req = StepRequestFor(id, t);
      ASSERT_TRUE(core->Step(DataOf(req)).ok());
      if (t <= 16) continue;
      const absl::StatusOr<v1::StepReply> r = c.Step(req);
      ASSERT_TRUE(r.ok()) << a << " step " << t << ": " << r.status();
      last = *r;
    }
    EXPECT_EQ(Vec(last.x()), Vec(core->decision())) << a;
  }
}

// One accepted row must not make a session stuck.  A
// least_squares row of value and target 1e80 (inside the input bound) was
// accepted by ir_fscg at t = 2, stayed in its window of 100 rows, and from
// t = 3 every ordinary step was refused ("non-finite aux[1]") until a
// batch of >= 100 rows pushed it out.  Such a row is now refused on
// arrival, naming it, and the stream goes on; every algorithm of the class
// holds it the same way.
TEST(SimpleE2e, ARowWhoseGradientCouldOverflowLaterRoundsIsRefusedOnArrival) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  for (const std::string& a : Algorithms()) {
    v1::CreateSessionRequest create;
    create.set_session_id(a);
    *create.mutable_spec() = LeastSquaresSpec(a);
    if (FindAlgorithm(a)->reads.Has(Opt::window_rows)) {  // the windowed ones
      create.mutable_spec()->mutable_options()->set_window_rows(100);
    }
    ASSERT_TRUE(c.CreateSession(create).ok()) << a;
    ASSERT_TRUE(c.Step(StepRequestFor(a, 1)).ok()) << a;
    v1::StepRequest poison = StepRequestFor(a, 2);
    poison.mutable_inner()->mutable_dense()->set_values(0, 1e80);
    poison.mutable_inner()->set_targets(0, 1e80);
    const absl::StatusOr<v1::StepReply> refused = c.Step(poison);
    ASSERT_FALSE(refused.ok()) << a << ": the 1e80 row was accepted";
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << a;
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr("inner row 0: its gradient (or residual) in least_squares can reach "))
        << a;
    EXPECT_THAT(std::string(refused.status().message()), HasSubstr("(|x_j| <= 2), beyond 1e+100"))
        << a;
    EXPECT_EQ(c.GetSession(a)->next_t(), 2) << a;
    for (int64_t t = 2; t <= 5; ++t) {
      const absl::StatusOr<v1::StepReply> r = c.Step(StepRequestFor(a, t));
      ASSERT_TRUE(r.ok()) << a << " t = " << t << ": " << r.status();
    }
  }
  // The largest row the bound admits is accepted, and later rounds run.
  v1::StepRequest big = StepRequestFor("ir_fscg", 6);
  v1::DenseMatrix* m = big.mutable_inner()->mutable_dense();
  for (int j = 0; j < kFeatures; ++j) m->set_values(j, j == 0 ? 1e49 : 0.0);
  big.mutable_inner()->set_targets(0, 1e49);  // 1e49 * (1e49 * 2 + 1e49) = 3e98
  ASSERT_TRUE(c.Step(big).ok());
  for (int64_t t = 7; t <= 12; ++t) {
    const absl::StatusOr<v1::StepReply> r = c.Step(StepRequestFor("ir_fscg", t));
    ASSERT_TRUE(r.ok()) << "t = " << t << ": " << r.status();
  }
}

TEST(SimpleE2e, BadSpecsAndStepsGetPreciseErrorsAndChangeNothing) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  client::Client c({server.target()});
  const struct {
    const char* what;
    void (*edit)(v1::SessionSpec*);
    const char* needle;
  } kBad[] = {
      {"radius <= 0",
       [](v1::SessionSpec* s) { s->mutable_constraint()->mutable_l1_ball()->set_radius(-1); },
       "constraint.l1_ball.radius"},
      {"no LMO for ir_scg",
       [](v1::SessionSpec* s) { s->mutable_constraint()->set_unconstrained(true); }, "constraint"},
      {"algorithm of the other class", [](v1::SessionSpec* s) { s->set_algorithm("f2obo"); },
       "'f2obo' is a bilevel algorithm"},
      {"family of the other class", [](v1::SessionSpec* s) { s->set_problem_class("bilevel"); },
       "family"},
  };
  for (const auto& bad : kBad) {
    v1::CreateSessionRequest create;
    create.set_session_id("bad");
    *create.mutable_spec() = LeastSquaresSpec("ir_scg");
    bad.edit(create.mutable_spec());
    const absl::StatusOr<v1::SessionInfo> r = c.CreateSession(create);
    ASSERT_FALSE(r.ok()) << bad.what;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad.what;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(bad.needle)) << bad.what;
  }
  ASSERT_TRUE(c.ListSessions()->sessions().empty());

  v1::CreateSessionRequest create;
  create.set_session_id("ok");
  *create.mutable_spec() = LeastSquaresSpec("ir_fscg");
  ASSERT_TRUE(c.CreateSession(create).ok());
  ASSERT_TRUE(c.Step(StepRequestFor("ok", 1)).ok());
  const absl::StatusOr<v1::Decision> before = c.GetDecision("ok");
  v1::StepRequest wide = StepRequestFor("ok", 2);
  wide.mutable_inner()->mutable_dense()->set_cols(kFeatures + 1);
  wide.mutable_inner()->mutable_dense()->add_values(0.0);
  wide.mutable_inner()->mutable_dense()->add_values(0.0);
  wide.mutable_inner()->mutable_dense()->add_values(0.0);
  const absl::StatusOr<v1::StepReply> r = c.Step(wide);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("inner"));
  const absl::StatusOr<v1::Decision> after = c.GetDecision("ok");
  EXPECT_EQ(after->t(), 2);
  EXPECT_EQ(Vec(after->x()), Vec(before->x()));
  EXPECT_EQ(Vec(after->iterate()), Vec(before->iterate()));
}

}  // namespace
}  // namespace f2obo
