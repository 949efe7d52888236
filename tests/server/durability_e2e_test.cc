// Durability: kill -9 at random moments, damaged records, export/import.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "client/client.h"
#include "core/state.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllAlgorithms;
using testing::AllFamilyCases;
using testing::CoreState;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

// The reference: the core library's state after `steps` uninterrupted steps.
v1::SessionSpec NoMetrics(v1::SessionSpec spec) {
  spec.mutable_metrics()->set_exact_every(0);  // keeps the state deterministic
  return spec;
}

TEST(Durability, KillNineAtTwentyRandomMomentsLosesAndRepeatsNoAcknowledgedStep) {
  constexpr int kSteps = 2000, kKills = 20;
  const uint64_t seed = 20261121;
  std::printf("crash test seed %llu\n", static_cast<unsigned long long>(seed));
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo, small
  const std::vector<std::string> algorithms = AllAlgorithms();
  const int total = kSteps * static_cast<int>(algorithms.size());
  std::mt19937_64 rng(seed);
  std::vector<int> kill_at;  // acknowledged-step counts at which to kill
  for (int i = 0; i < kKills; ++i) kill_at.push_back(1 + static_cast<int>(rng() % (total - 1)));
  std::sort(kill_at.begin(), kill_at.end());
  for (int k : kill_at) std::printf("kill after %d acknowledged steps\n", k);

  // The directory outlives each server process (a ServerProcess removes
  // only directories it made itself).
  const std::string dir = testing::MakeTempDir();
  auto server = std::make_unique<ServerProcess>(std::vector<std::string>{}, dir);
  ASSERT_TRUE(server->started()) << server->banner();
  const std::string port = std::to_string(server->grpc_port());
  client::ClientOptions copt{server->target()};
  copt.max_attempts = 40;  // rides out restarts (each well under a second)
  client::Client c(copt);
  std::vector<std::string> ids;
  for (const std::string& a : algorithms) {
    v1::CreateSessionRequest create;
    create.set_session_id("crash-" + a);
    *create.mutable_spec() = NoMetrics(SpecFor(f, a, 5));
    ASSERT_TRUE(c.CreateSession(create).ok());
    ids.push_back(create.session_id());
  }

  std::mutex mu;
  std::condition_variable cv;
  int acknowledged = 0;
  bool done = false;
  const auto finish = [&] {
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  };
  std::thread killer([&] {
    for (int k : kill_at) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return done || acknowledged >= k; });
      if (done) return;
      lock.unlock();
      // Kill while the streamer is mid-request, then restart on the same port.
      server->Stop(SIGKILL);
      server = std::make_unique<ServerProcess>(
          std::vector<std::string>{"--listen=127.0.0.1:" + port}, dir);
      if (!server->started()) {
        ADD_FAILURE() << "restart failed: " << server->Stderr();
        return;
      }
    }
  });
  // Joins the killer on every exit path, failed assertions included.
  struct Joiner {
    std::thread& t;
    std::function<void()> finish;
    ~Joiner() {
      finish();
      t.join();
    }
  } joiner{killer, finish};
  std::vector<int64_t> next(ids.size(), 1);
  std::vector<int> replayed(ids.size(), 0);
  for (int round = 0; round < kSteps; ++round) {
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto reply = c.Step(RequestFor(f, ids[i], next[i]));
      if (!reply.ok()) {
        // Resume from the server's next index (also the retry story).
        const auto info = c.GetSession(ids[i]);
        ASSERT_TRUE(info.ok()) << info.status();
        ASSERT_TRUE(info->next_t() == next[i] || info->next_t() == next[i] + 1)
            << "server lost or invented steps: next_t " << info->next_t() << " vs " << next[i];
        next[i] = info->next_t();
        --i;  // retry this session in this round
        continue;
      }
      ASSERT_EQ(reply->t(), next[i]);
      replayed[i] += reply->replayed();
      ++next[i];
      std::lock_guard<std::mutex> lock(mu);
      ++acknowledged;
      cv.notify_all();
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    v1::ExportSessionRequest req;
    req.set_session_id(ids[i]);
    v1::SessionExport ex;
    auto ctx = c.NewContext();
    ASSERT_TRUE(c.stub().ExportSession(ctx.get(), req, &ex).ok());
    const auto state = DeserializeCheckpoint(ex.state());
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->state.t, kSteps + 1) << ids[i];
    const auto expected = CoreState(f, NoMetrics(SpecFor(f, algorithms[i], 5)), kSteps);
    ASSERT_TRUE(expected.ok()) << expected.status();
    EXPECT_TRUE(state->BitEquals(*expected)) << ids[i] << " differs from the uninterrupted run";
    std::printf("%s: %d replies came from the durable reply cache\n", ids[i].c_str(), replayed[i]);
  }
  std::printf("server restarts: %s", server->Stderr().c_str());
}

// Flips one byte of a stored session's state blob in place.
void CorruptStoredState(const std::string& db_path, const std::string& id) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      "UPDATE sessions SET state = substr(state, 1, 40) || X'FF' || substr(state, 42) "
      "WHERE id = '" +
      id + "'";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST(Durability, ADamagedSessionIsRefusedWithAClearMessageAndTheOthersServe) {
  const FamilyCase f = AllFamilyCases()[0];
  const std::string dir = testing::MakeTempDir();
  std::vector<double> x_of_c;
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    for (const char* id : {"a", "b", "c"}) {
      v1::CreateSessionRequest create;
      create.set_session_id(id);
      *create.mutable_spec() = SpecFor(f, "f2obo", 1);
      ASSERT_TRUE(c.CreateSession(create).ok());
      for (int t = 1; t <= 5; ++t) ASSERT_TRUE(c.Step(RequestFor(f, id, t)).ok());
    }
    const auto d = c.GetDecision("c");
    x_of_c.assign(d->x().begin(), d->x().end());
    ASSERT_EQ(server.Stop(SIGTERM), 0);
  }
  CorruptStoredState(dir + "/f2obo.sqlite3", "b");
  ServerProcess server({}, dir);
  ASSERT_TRUE(server.started()) << server.Stderr();
  EXPECT_THAT(server.Stderr(), HasSubstr("NOT LOADED: session 'b': state checksum mismatch"));
  client::Client c({server.target()});
  EXPECT_EQ(c.GetSession("b").status().code(), absl::StatusCode::kNotFound);
  const auto d = c.GetDecision("c");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(std::vector<double>(d->x().begin(), d->x().end()), x_of_c);
  EXPECT_TRUE(c.Step(RequestFor(f, "a", 6)).ok());
  EXPECT_TRUE(c.Step(RequestFor(f, "c", 6)).ok());
}

TEST(Durability, ATruncatedStoreIsRefusedAtStartNamingTheFileNeverACrash) {
  const FamilyCase f = AllFamilyCases()[1];
  const std::string dir = testing::MakeTempDir();
  {
    ServerProcess server({}, dir);
    ASSERT_TRUE(server.started());
    client::Client c({server.target()});
    for (int s = 0; s < 20; ++s) {
      v1::CreateSessionRequest create;
      create.set_session_id("s" + std::to_string(s));
      *create.mutable_spec() = SpecFor(f, "f2obo", 1);
      ASSERT_TRUE(c.CreateSession(create).ok());
      for (int t = 1; t <= 3; ++t) ASSERT_TRUE(c.Step(RequestFor(f, create.session_id(), t)).ok());
    }
    ASSERT_EQ(server.Stop(SIGTERM), 0);  // checkpoints the WAL into the file
  }
  const std::string db = dir + "/f2obo.sqlite3";
  std::FILE* file = std::fopen(db.c_str(), "rb");
  ASSERT_NE(file, nullptr);
  std::fseek(file, 0, SEEK_END);
  const long size = std::ftell(file);
  std::fclose(file);
  ASSERT_EQ(truncate(db.c_str(), size / 2), 0);
  // PRAGMA quick_check at open finds the cut b-trees: the server refuses to
  // start, naming the file, and exits 1 (never a crash, never an empty start
  // that would hide the sessions and write over the damage).
  ServerProcess server({}, dir);
  EXPECT_FALSE(server.started());
  EXPECT_EQ(server.Stop(SIGKILL), 1);
  EXPECT_THAT(server.Stderr(), HasSubstr("store " + db + " is damaged"));
  EXPECT_THAT(server.Stderr(), HasSubstr("refusing to start"));
}

TEST(Durability, ExportedSessionContinuesIdenticallyOnAFreshServer) {
  const FamilyCase f = AllFamilyCases()[3];  // logistic_hpo CSR
  ServerProcess first, second;
  ASSERT_TRUE(first.started() && second.started());
  client::Client a({first.target()}), b({second.target()});
  v1::CreateSessionRequest create;
  create.set_session_id("mover");
  *create.mutable_spec() = SpecFor(f, "sf2obo", 9);
  ASSERT_TRUE(a.CreateSession(create).ok());
  for (int t = 1; t <= 30; ++t) ASSERT_TRUE(a.Step(RequestFor(f, "mover", t)).ok());
  v1::ExportSessionRequest req;
  req.set_session_id("mover");
  v1::SessionExport ex;
  auto ctx = a.NewContext();
  ASSERT_TRUE(a.stub().ExportSession(ctx.get(), req, &ex).ok());
  v1::ImportSessionRequest imp;
  *imp.mutable_session() = ex;
  v1::SessionInfo info;
  auto ctx2 = b.NewContext();
  ASSERT_TRUE(b.stub().ImportSession(ctx2.get(), imp, &info).ok());
  EXPECT_EQ(info.next_t(), 31);
  // A retry of the last step is answered from the imported reply cache.
  const auto retry = b.Step(RequestFor(f, "mover", 30));
  ASSERT_TRUE(retry.ok());
  EXPECT_TRUE(retry->replayed());
  for (int t = 31; t <= 60; ++t) {
    const auto ra = a.Step(RequestFor(f, "mover", t));
    const auto rb = b.Step(RequestFor(f, "mover", t));
    ASSERT_TRUE(ra.ok() && rb.ok());
    ASSERT_EQ(std::vector<double>(ra->x().begin(), ra->x().end()),
              std::vector<double>(rb->x().begin(), rb->x().end()))
        << "diverged at t = " << t;
  }
  // A corrupted export is refused, naming the field.
  imp.mutable_session()->mutable_state()->at(20) ^= 1;
  imp.set_session_id("broken");
  auto ctx3 = b.NewContext();
  const grpc::Status bad = b.stub().ImportSession(ctx3.get(), imp, &info);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), HasSubstr("session.state: session state: checksum"));
}

}  // namespace
}  // namespace f2obo
