// The shared store's database failing under running streams (two replicas
// on one PostgreSQL, each stream on the replica holding its session; real
// processes on loopback):
//  - PostgreSQL killed with -9 mid-stream and restarted: while it is down a
//    step is answered UNAVAILABLE (retryable) and changes nothing, reads of
//    the replicas' in-memory state keep working; then the streams resume.
//  - A primary with a synchronous standby, the primary killed with -9 and
//    the standby promoted: the replicas find it through the multi-host URI
//    (target_session_attrs=read-write) and continue; every step
//    acknowledged before the primary died is on the promoted standby.
// In both, every stream finishes, its replies and its session's final state
// equal a fault-free run's bit for bit.  And a store URI that reaches only
// the standby is refused at start.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/replica_set.h"
#include "tests/server/server_process.h"
#include "tests/server/store/postgres/failover_streams.h"
#include "tests/server/store/postgres/pg_cluster.h"

namespace f2obo {
namespace {

using testing::PgCluster;
using testing::PgServer;
using testing::ReplicaSet;
using testing::ServerProcess;
using testing::StreamRun;

constexpr int kBuiltinStreams = 7;  // and the oracle session: 8 streams
constexpr int64_t kSteps = 24;
constexpr int kReplicas = 2;

class DatabaseFailover : public ::testing::Test {
 protected:
  // Two replicas on `uri`, the streams' sessions made on them (stream i on
  // replica i % 2) and the fault-free reference run; a probe session on
  // replica 0, stepped once.
  void SetUpStreams(const std::string& uri) {
    replicas_ = std::make_unique<ReplicaSet>(kReplicas, /*named=*/true,
                                             std::vector<std::string>{"--store=" + uri});
    ASSERT_EQ(replicas_->NotStarted(), "");
    reference_ = std::make_unique<ServerProcess>(std::vector<std::string>{"--data_dir="});
    ASSERT_TRUE(reference_->started()) << reference_->Stderr();
    ref_client_ = std::make_unique<client::Client>(client::ClientOptions{reference_->target()});
    absl::StatusOr<std::vector<testing::StreamCase>> cases =
        testing::FailoverStreams("db", kBuiltinStreams, *ref_client_);
    ASSERT_TRUE(cases.ok()) << cases.status();
    absl::StatusOr<testing::Reference> ref = testing::RunReference(*ref_client_, *cases, kSteps);
    ASSERT_TRUE(ref.ok()) << ref.status();
    ref_ = *std::move(ref);
    run_ = std::make_unique<StreamRun>(
        *cases, [this](int i) { return (*replicas_)[i % kReplicas].target(); }, kSteps);
    ASSERT_TRUE(run_->CreateSessions().ok());
    v1::CreateSessionRequest probe;
    probe.set_session_id("probe");
    *probe.mutable_spec() = testing::SpecFor(family_, "f2obo", 5);
    client::Client r0 = replicas_->Direct(0);
    ASSERT_TRUE(r0.CreateSession(probe).ok());
    ASSERT_TRUE(r0.Step(testing::RequestFor(family_, "probe", 1)).ok());
  }

  // A moment (acknowledged steps over all streams) drawn and logged.
  int64_t Moment(uint64_t seed) {
    std::mt19937_64 rng(seed);
    const int64_t total = static_cast<int64_t>(run_->cases().size()) * kSteps;
    const int64_t m = total / 5 + static_cast<int64_t>(rng() % (total * 3 / 10));
    std::printf("seed %llu: the database fails after %lld of %lld acknowledged steps\n",
                static_cast<unsigned long long>(seed), static_cast<long long>(m),
                static_cast<long long>(total));
    return m;
  }

  // With the database down: a step is UNAVAILABLE and moves nothing; the
  // replicas' in-memory state reads; every stream still running meets the
  // outage (an attempt refused).
  void CheckWhileDown(const std::vector<int64_t>& acknowledged, const std::vector<int>& refused) {
    client::Client r0 = replicas_->Direct(0);
    absl::StatusOr<v1::StepReply> step = r0.Step(testing::RequestFor(family_, "probe", 2));
    EXPECT_TRUE(absl::IsUnavailable(step.status())) << step.status();
    absl::StatusOr<v1::SessionInfo> probe = r0.GetSession("probe");
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_EQ(probe->next_t(), 2) << "a refused step moved the session";
    for (size_t i = 0; i < run_->cases().size(); ++i) {
      const std::string& id = run_->cases()[i].id;
      client::Client direct = replicas_->Direct(static_cast<int>(i) % kReplicas);
      absl::StatusOr<v1::SessionInfo> info = direct.GetSession(id);
      ASSERT_TRUE(info.ok()) << id << ": " << info.status();
      EXPECT_GE(info->next_t(), acknowledged[i] + 1) << id;
      absl::StatusOr<v1::Decision> decision = direct.GetDecision(id);
      EXPECT_TRUE(decision.ok()) << id << ": " << decision.status();
    }
    EXPECT_TRUE(run_->AwaitEachRefused(refused, std::chrono::seconds(30)))
        << "a stream did not meet the outage: " << run_->Failure();
  }

  // Every stream finished, equal to the fault-free run; `db` (the primary
  // now) holds every session at its last step.
  void CheckFinished(const PgServer& db) {
    run_->Join();
    for (size_t i = 0; i < run_->cases().size(); ++i) {
      const testing::StreamResult& r = run_->results()[i];
      std::printf("%s: %zu steps acknowledged, %d attempts refused and retried\n",
                  run_->cases()[i].id.c_str(), r.acks.size(), r.refused);
    }
    EXPECT_EQ(testing::CompareWithReference(
                  *run_, ref_, [this](int i) { return (*replicas_)[i % kReplicas].target(); }),
              "");
    for (const testing::StreamCase& c : run_->cases()) {
      absl::StatusOr<std::string> next_t =
          pg_->Query(db, "SELECT next_t FROM f2obo_sessions WHERE id = '" + c.id + "'");
      ASSERT_TRUE(next_t.ok()) << next_t.status();
      EXPECT_EQ(*next_t, std::to_string(kSteps + 1)) << c.id;
    }
  }

  const testing::FamilyCase family_ = testing::AllFamilyCases()[2];
  std::unique_ptr<PgCluster> pg_;
  std::unique_ptr<ReplicaSet> replicas_;
  std::unique_ptr<ServerProcess> reference_;
  std::unique_ptr<client::Client> ref_client_;
  testing::Reference ref_;
  std::unique_ptr<StreamRun> run_;
};

TEST_F(DatabaseFailover, KillNineOfPostgresMidStreamRefusesStepsKeepsReadsAndLosesNothing) {
  absl::StatusOr<std::unique_ptr<PgCluster>> pg = PgCluster::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  pg_ = *std::move(pg);
  testing::ScopedEnv password("PGPASSWORD", pg_->password());
  SetUpStreams(pg_->Uri(pg_->primary(), /*with_password=*/false));
  if (HasFatalFailure()) return;
  const int64_t moment = Moment(41);
  run_->Start();
  ASSERT_GE(run_->AwaitTotal(moment, std::chrono::seconds(120)), moment) << run_->Failure();
  ASSERT_TRUE(pg_->primary().Kill().ok());
  CheckWhileDown(run_->Acknowledged(), run_->Refused());
  ASSERT_TRUE(pg_->primary().Start().ok());
  CheckFinished(pg_->primary());
}

TEST_F(DatabaseFailover, KillNineOfPrimaryAndPromotionOfSyncStandbyLosesNoAcknowledgedStep) {
  absl::StatusOr<std::unique_ptr<PgCluster>> pg = PgCluster::Start(/*sync_standby=*/true);
  ASSERT_TRUE(pg.ok()) << pg.status();
  pg_ = *std::move(pg);
  testing::ScopedEnv password("PGPASSWORD", pg_->password());
  {
    // A URI that reaches only the standby is refused at start: nothing
    // there takes writes (bad configuration: a clear message, exit 1).
    const std::string standby_only = "postgresql://" + pg_->user() +
                                     "@127.0.0.1:" + std::to_string(pg_->standby().port()) + "/" +
                                     pg_->database() + "?target_session_attrs=read-write";
    ServerProcess refused({"--store=" + standby_only});
    EXPECT_FALSE(refused.started());
    EXPECT_EQ(refused.Stop(SIGKILL), 1);
    EXPECT_NE(refused.Stderr().find("--store: cannot connect to PostgreSQL"), std::string::npos)
        << refused.Stderr();
    EXPECT_NE(refused.Stderr().find("read-only"), std::string::npos) << refused.Stderr();
  }
  SetUpStreams(pg_->MultiHostUri(/*with_password=*/false));
  if (HasFatalFailure()) return;
  const int64_t moment = Moment(43);
  run_->Start();
  ASSERT_GE(run_->AwaitTotal(moment, std::chrono::seconds(120)), moment) << run_->Failure();
  ASSERT_TRUE(pg_->primary().Kill().ok());
  CheckWhileDown(run_->Acknowledged(), run_->Refused());
  // Nothing commits between the primary's death and the promotion (the
  // standby is read-only): what the streams hold now is every step the
  // old primary acknowledged.
  const std::vector<int64_t> acknowledged = run_->Acknowledged();
  ASSERT_TRUE(pg_->standby().Promote().ok());
  for (size_t i = 0; i < run_->cases().size(); ++i) {
    const std::string& id = run_->cases()[i].id;
    absl::StatusOr<std::string> next_t =
        pg_->Query(pg_->standby(), "SELECT next_t FROM f2obo_sessions WHERE id = '" + id + "'");
    ASSERT_TRUE(next_t.ok()) << next_t.status();
    EXPECT_GE(std::stoll(*next_t), acknowledged[i] + 1)
        << id << ": an acknowledged step is missing on the promoted standby";
  }
  CheckFinished(pg_->standby());
}

}  // namespace
}  // namespace f2obo
