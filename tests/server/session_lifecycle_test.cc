// SessionManager's lifecycle races, on the manager directly with a real
// (temporary-directory) store.  The interleavings are forced at the
// server's fault points (server/fault_points.h), so each test is
// deterministic without sleeps:
//  * a Step that found its session just before a Delete must neither apply
//    nor persist (a store write after the delete resurrected the session
//    at the next restart);
//  * a session being created is invisible until it is complete;
//  * an import without exact_every gets the same default as a create;
//  * stopping the metrics pipeline (server shutdown) drains its queue;
//  * once the service shuts down, new calls are refused with UNAVAILABLE
//    while a round already admitted completes.
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "core/bilevel/bilevel_family_registry.h"
#include "core/problem_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fault_points.h"
#include "server/metrics/registry.h"
#include "server/metrics_pipeline.h"
#include "server/service.h"
#include "server/service_metrics.h"
#include "server/session_manager.h"
#include "server/store/sqlite_session_store.h"
#include "tests/server/e2e_support.h"

namespace f2obo::server {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using testing::RequestFor;
using testing::SpecFor;

// Calls `f` with the id at every fault point `point` until the test ends.
void At(std::string_view point, std::function<void(const std::string& id)> f) {
  SetFaultHandlerForTesting([point, f](std::string_view p, std::string_view id) {
    if (p == point) f(std::string(id));
    return absl::OkStatus();
  });
}

std::string NewTempDir() {
  std::string templ = ::testing::TempDir() + "f2obo-lifecycle-XXXXXX";
  return mkdtemp(templ.data()) != nullptr ? templ : "";
}

class SessionLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewTempDir();
    ASSERT_FALSE(dir_.empty());
    OpenManager();
  }
  void TearDown() override {
    SetFaultHandlerForTesting({});  // its callbacks refer to this test
    mgr_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void OpenManager() {
    mgr_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<SqliteSessionStore>> store =
        SqliteSessionStore::Open(dir_, Durability::kSync);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    mgr_ = std::make_unique<SessionManager>(Limits{}, &pipeline_, store_.get());
  }
  // The sessions a restarted server would load.
  size_t StoredSessions() {
    absl::StatusOr<LoadedStore> loaded = store_->LoadAll();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? loaded->sessions.size() : 0;
  }
  absl::StatusOr<v1::SessionInfo> Create(const std::string& id) {
    v1::CreateSessionRequest req;
    req.set_session_id(id);
    *req.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
    return mgr_->Create(req);
  }

  const FamilyCase quadratic_ = AllFamilyCases()[0];
  std::string dir_;
  MetricsPipeline pipeline_{1, 4, nullptr};
  std::unique_ptr<SqliteSessionStore> store_;
  std::unique_ptr<SessionManager> mgr_;
};

TEST_F(SessionLifecycleTest, StepRacingDeleteIsNotFoundAndLeavesNothingStored) {
  ASSERT_TRUE(Create("a").ok());
  ASSERT_TRUE(mgr_->Step(RequestFor(quadratic_, "a", 1)).ok());
  ASSERT_EQ(StoredSessions(), 1u);

  // The Delete runs entirely between the Step's lookup and its lock.
  int deletes = 0;
  At("step_after_find", [&](const std::string& id) {
    ++deletes;
    EXPECT_TRUE(mgr_->Delete(id).ok());
  });
  const absl::StatusOr<v1::StepReply> step = mgr_->Step(RequestFor(quadratic_, "a", 2));
  ASSERT_EQ(deletes, 1);
  EXPECT_EQ(step.status().code(), absl::StatusCode::kNotFound) << step.status();
  EXPECT_NE(step.status().message().find("'a' was deleted"), std::string::npos) << step.status();

  EXPECT_EQ(StoredSessions(), 0u);
  // And a restart (a new manager on the same directory) does not bring it back.
  OpenManager();
  absl::StatusOr<std::vector<std::string>> problems = mgr_->Recover();
  ASSERT_TRUE(problems.ok()) << problems.status();
  EXPECT_TRUE(problems->empty());
  EXPECT_EQ(mgr_->size(), 0u);
  EXPECT_EQ(mgr_->Get("a").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SessionLifecycleTest, RetriedStepRacingDeleteIsNotServedFromTheCache) {
  ASSERT_TRUE(Create("a").ok());
  ASSERT_TRUE(mgr_->Step(RequestFor(quadratic_, "a", 1)).ok());
  At("step_after_find", [&](const std::string& id) { EXPECT_TRUE(mgr_->Delete(id).ok()); });
  // t = 1 is in the reply cache; a deleted session answers nothing.
  EXPECT_EQ(mgr_->Step(RequestFor(quadratic_, "a", 1)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(SessionLifecycleTest, SessionBeingCreatedIsInvisibleUntilComplete) {
  int calls = 0;
  std::future<absl::StatusOr<v1::SessionInfo>> second;
  At("before_publish", [&](const std::string& id) {
    ++calls;
    ASSERT_EQ(id, "new");
    // Complete (already durable) but not yet published.
    EXPECT_EQ(StoredSessions(), 1u);
    EXPECT_EQ(mgr_->Get(id).status().code(), absl::StatusCode::kNotFound);
    EXPECT_TRUE(mgr_->List().empty());
    EXPECT_EQ(mgr_->Step(RequestFor(quadratic_, id, 1)).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_EQ(mgr_->Metrics(id).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(mgr_->GetDecision(id).status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(mgr_->Delete(id).code(), absl::StatusCode::kNotFound);
    // The id is taken all the same: a second create of it must not slip
    // in.  It waits for this one's outcome (here: created), then refuses.
    second = std::async(std::launch::async, [this, id] { return Create(id); });
  });
  absl::StatusOr<v1::SessionInfo> created = Create("new");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(second.valid());
  EXPECT_EQ(second.get().status().code(), absl::StatusCode::kAlreadyExists);
  SetFaultHandlerForTesting({});
  EXPECT_TRUE(mgr_->Get("new").ok());
  EXPECT_EQ(mgr_->List().size(), 1u);
  EXPECT_TRUE(mgr_->Metrics("new").ok());
  EXPECT_TRUE(mgr_->Step(RequestFor(quadratic_, "new", 1)).ok());
}

TEST_F(SessionLifecycleTest, ReservedIdsCountTowardMaxSessions) {
  Limits limits;
  limits.max_sessions = 1;
  SessionManager mgr(limits, &pipeline_, nullptr);
  At("before_publish", [&](const std::string&) {
    v1::CreateSessionRequest other;
    *other.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
    EXPECT_EQ(mgr.Create(other).status().code(), absl::StatusCode::kResourceExhausted);
  });
  v1::CreateSessionRequest req;
  *req.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
  ASSERT_TRUE(mgr.Create(req).ok());
  EXPECT_EQ(mgr.size(), 1u);
}

// The server's cap on inner iterations applies to the options an algorithm
// reads: f2obo (fixed K) ignores max_inner_iterations, whose generic default
// (10,000) is above a cap of 50, and an export of it (which carries only the
// options f2obo reads) must import under the same cap.
TEST_F(SessionLifecycleTest, InnerIterationCapAppliesOnlyToTheOptionsTheAlgorithmReads) {
  Limits limits;
  limits.max_inner_iterations = 50;
  SessionManager mgr(limits, &pipeline_, nullptr);
  v1::CreateSessionRequest req;
  req.set_session_id("fixed_k");
  *req.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
  ASSERT_TRUE(mgr.Create(req).ok());
  absl::StatusOr<v1::SessionExport> ex = mgr.Export("fixed_k");
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_FALSE(ex->spec().options().has_max_inner_iterations());
  v1::ImportSessionRequest import;
  import.set_session_id("copy");
  *import.mutable_session() = *ex;
  EXPECT_TRUE(mgr.Import(import).ok());

  // af2obo reads the cap: above the server's, refused naming it.
  req.set_session_id("adaptive");
  *req.mutable_spec() = SpecFor(quadratic_, "af2obo", 7);
  req.mutable_spec()->mutable_options()->set_max_inner_iterations(51);
  const absl::Status refused = mgr.Create(req).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("max_inner_iterations = 50"));
}

TEST_F(SessionLifecycleTest, ImportWithoutExactEveryGetsTheCreateDefault) {
  v1::CreateSessionRequest req;
  req.set_session_id("orig");
  *req.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
  req.mutable_spec()->mutable_metrics()->clear_exact_every();
  absl::StatusOr<v1::SessionInfo> created = mgr_->Create(req);
  ASSERT_TRUE(created.ok()) << created.status();
  const int expected = created->spec().metrics().exact_every();
  ASSERT_EQ(expected, 1);  // a small session: exact metrics every step

  absl::StatusOr<v1::SessionExport> ex = mgr_->Export("orig");
  ASSERT_TRUE(ex.ok()) << ex.status();
  v1::ImportSessionRequest import;
  import.set_session_id("copy");
  *import.mutable_session() = *ex;
  import.mutable_session()->mutable_spec()->mutable_metrics()->clear_exact_every();
  absl::StatusOr<v1::SessionInfo> imported = mgr_->Import(import);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->spec().metrics().exact_every(), expected);  // was 0: no metrics

  // An explicit value is kept, 0 included.
  import.set_session_id("explicit");
  import.mutable_session()->mutable_spec()->mutable_metrics()->set_exact_every(0);
  imported = mgr_->Import(import);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->spec().metrics().exact_every(), 0);
}

TEST_F(SessionLifecycleTest, ShutdownRefusesNewCallsButFinishesTheAdmittedRound) {
  ASSERT_TRUE(Create("a").ok());
  F2oboService service(mgr_.get(), nullptr, nullptr, nullptr);
  grpc::ServerContext ctx;
  v1::GetSessionRequest get;
  get.set_session_id("a");
  v1::SessionInfo info;
  ASSERT_TRUE(service.GetSession(&ctx, &get, &info).ok());

  // The shutdown begins while a Step is inside the session manager.
  bool hooked = false;
  At("step_after_find", [&](const std::string&) {
    hooked = true;
    service.BeginShutdown();
    // The admitted round keeps the service busy...
    EXPECT_FALSE(service.WaitIdle(std::chrono::steady_clock::now()));
    // ...and any new call is refused.
    grpc::ServerContext other;
    v1::SessionInfo unused;
    const grpc::Status refused = service.GetSession(&other, &get, &unused);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_EQ(refused.error_message(), "server is shutting down");
    v1::StepReply no_reply;
    const v1::StepRequest step2 = RequestFor(quadratic_, "a", 2);
    EXPECT_EQ(service.Step(&other, &step2, &no_reply).error_code(), grpc::StatusCode::UNAVAILABLE);
  });
  const v1::StepRequest step1 = RequestFor(quadratic_, "a", 1);
  v1::StepReply reply;
  const grpc::Status status = service.Step(&ctx, &step1, &reply);
  ASSERT_TRUE(hooked);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(reply.t(), 1);
  EXPECT_TRUE(service.WaitIdle(std::chrono::steady_clock::now()));
  SetFaultHandlerForTesting({});
  // Applied once: the refused step 2 never reached the session.
  absl::StatusOr<v1::SessionInfo> after = mgr_->Get("a");
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->next_t(), 2);
}

// f2obo_rpc_in_flight counts the handler while it runs.
TEST_F(SessionLifecycleTest, InFlightGaugeCountsTheRunningHandler) {
  ASSERT_TRUE(Create("a").ok());
  metrics::Registry registry;
  ServiceMetrics observer(&registry, true);
  F2oboService service(mgr_.get(), nullptr, &observer, nullptr);
  const std::string idle = "\nf2obo_rpc_in_flight 0\n";
  const std::string busy = "\nf2obo_rpc_in_flight 1\n";
  EXPECT_NE(registry.Render().find(idle), std::string::npos) << registry.Render();
  std::string during;
  At("step_after_find", [&](const std::string&) { during = registry.Render(); });
  grpc::ServerContext ctx;
  const v1::StepRequest step = RequestFor(quadratic_, "a", 1);
  v1::StepReply reply;
  ASSERT_TRUE(service.Step(&ctx, &step, &reply).ok());
  EXPECT_NE(during.find(busy), std::string::npos) << during;
  EXPECT_NE(registry.Render().find(idle), std::string::npos) << registry.Render();
}

// A graceful shutdown drains the metrics pipeline: jobs of acknowledged
// steps still queued when Stop() begins are processed and published (the
// workers used to return at once, dropping them).
// CreateSession and DeleteSession honour the call's
// deadline in the store's queue.  The store's writer is held (as by another
// session's large write) at the store_write fault point while "held"'s step
// is written; a create and a delete whose deadlines pass meanwhile are
// withdrawn: DEADLINE_EXCEEDED, and nothing happened, in memory or on disk.
// Before, both were applied once the writer came to them.
TEST_F(SessionLifecycleTest, ACreateOrDeleteWhoseDeadlinePassesInTheStoresQueueDoesNotHappen) {
  ASSERT_TRUE(Create("held").ok());
  ASSERT_TRUE(Create("victim").ok());
  std::promise<void> taken, release;
  std::shared_future<void> released = release.get_future().share();
  SetFaultHandlerForTesting([&](std::string_view point, std::string_view id) {
    if (point == "store_write" && id == "held") {
      taken.set_value();
      released.wait();
    }
    return absl::OkStatus();
  });
  std::thread step([&] { EXPECT_TRUE(mgr_->Step(RequestFor(quadratic_, "held", 1)).ok()); });
  taken.get_future().wait();  // the writer holds "held"'s step
  const auto soon = [] { return std::chrono::system_clock::now() + std::chrono::milliseconds(50); };
  v1::CreateSessionRequest create;
  create.set_session_id("late");
  *create.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
  const absl::StatusOr<v1::SessionInfo> created = mgr_->Create(create, soon());
  EXPECT_EQ(created.status().code(), absl::StatusCode::kDeadlineExceeded) << created.status();
  EXPECT_THAT(std::string(created.status().message()), ::testing::HasSubstr("not created"));
  const absl::Status deleted = mgr_->Delete("victim", /*from_store=*/true, soon());
  EXPECT_EQ(deleted.code(), absl::StatusCode::kDeadlineExceeded) << deleted;
  EXPECT_THAT(std::string(deleted.message()), ::testing::HasSubstr("not deleted"));
  release.set_value();
  step.join();
  SetFaultHandlerForTesting({});
  EXPECT_EQ(mgr_->Get("late").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(mgr_->Get("victim").ok());
  EXPECT_TRUE(mgr_->Step(RequestFor(quadratic_, "victim", 1)).ok());
  EXPECT_EQ(StoredSessions(), 2u);  // held and victim, not late
  // The id is free again: a retry creates it.
  EXPECT_TRUE(mgr_->Create(create).ok());
}

// A deadline that passed while the session was built (before its write)
// creates nothing either.
TEST_F(SessionLifecycleTest, ACreateWhoseDeadlinePassedBeforeItsWriteIsNotWritten) {
  v1::CreateSessionRequest create;
  create.set_session_id("late");
  *create.mutable_spec() = SpecFor(quadratic_, "f2obo", 7);
  const absl::StatusOr<v1::SessionInfo> created =
      mgr_->Create(create, std::chrono::system_clock::now() - std::chrono::seconds(1));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kDeadlineExceeded) << created.status();
  EXPECT_EQ(StoredSessions(), 0u);
  EXPECT_TRUE(mgr_->Create(create).ok());
}

TEST(MetricsPipelineStop, DrainsQueuedJobsBeforeJoiningTheWorkers) {
  constexpr int kJobs = 20;
  MetricsPipeline* pipeline_ptr = nullptr;
  std::atomic<int> observed{0};
  // The only worker is held in its first job until Stop() has begun, so
  // the other jobs are certainly still queued then (a condition, not a
  // sleep).
  MetricsPipeline pipeline(1, 64, [&](const v1::StepMetrics&) {
    if (observed++ == 0) {
      while (!pipeline_ptr->stopping()) std::this_thread::yield();
    }
  });
  pipeline_ptr = &pipeline;
  FamilyConfig family;
  family.name = "quadratic";
  family.x_dim = 2;
  family.y_dim = 2;
  SessionConfig config;
  config.family = family;
  config.algorithm = "f2obo";
  config.options = DefaultAlgorithmOptions("f2obo");
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  ASSERT_TRUE(session.ok()) << session.status();
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator =
      (*session)->problem().NewMetricsEvaluator();
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  std::shared_ptr<SessionMetrics> channel = pipeline.Open(
      "s", *std::move(evaluator), [](const ClassMetrics*, double) { return RunningMetrics{}; });
  for (int t = 1; t <= kJobs; ++t) {
    MetricsJob job;
    job.t = t;
    pipeline.Enqueue(channel, std::move(job));
  }
  pipeline.Stop();
  EXPECT_EQ(observed.load(), kJobs);
  const std::vector<v1::StepMetrics> published = channel->Snapshot(0);
  ASSERT_EQ(published.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(published.back().t(), kJobs);
  EXPECT_TRUE(channel->closed());
}

}  // namespace
}  // namespace f2obo::server
