// The durable reply cache under kill -9 (a step's reply row is
// now written by moving the session's oldest row, not by an insert and a
// trim).  Several sessions step concurrently (their writes share group
// commits) while the server is killed at random moments and restarted,
// sometimes with another --reply_cache.  After each restart every session
// answers a retry of each of its newest reply_cache steps with the very
// reply it acknowledged (marked replayed), and refuses the step before: the
// cache the killed server kept, trimmed at load to a shorter --reply_cache.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

// One attempt, no retries: the test sees the server's own answers.
grpc::Status RawStep(client::Client& c, const v1::StepRequest& req, v1::StepReply* reply) {
  auto ctx = c.NewContext();
  return c.stub().Step(ctx.get(), req, reply);
}

TEST(ReplyCacheE2e, AfterKillNineTheNewestRepliesAnswerRetriesAsAcknowledged) {
  const uint64_t seed = 20261127;
  std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
  std::mt19937_64 rng(seed);
  const FamilyCase f = AllFamilyCases()[0];
  constexpr int kSessions = 4;
  // --reply_cache for each run; a change shortens or lengthens the cache at
  // the sessions' next step.
  const std::vector<int> keeps = {4, 4, 2, 6, 6, 3};
  const std::string dir = testing::MakeTempDir();
  std::vector<std::string> ids;
  // Every acknowledged reply, by session and step (the replayed flag off).
  std::vector<std::map<int64_t, std::string>> acked(kSessions);
  std::vector<int64_t> next(kSessions, 1);
  int previous_keep = 0;
  // Run r starts a server with keeps[r] on the same directory, checks what
  // the previous run's kill left, then (but for the last run) steps and
  // kills.
  for (size_t run = 0; run < keeps.size(); ++run) {
    const int keep = keeps[run];
    auto server = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--reply_cache=" + std::to_string(keep)}, dir);
    ASSERT_TRUE(server->started()) << server->Stderr();
    client::ClientOptions copt{server->target()};
    copt.max_attempts = 1;
    client::Client c(copt);
    if (run == 0) {
      for (int i = 0; i < kSessions; ++i) {
        v1::CreateSessionRequest create;
        create.set_session_id("cache-" + std::to_string(i));
        *create.mutable_spec() = SpecFor(f, "f2obo", 7);
        create.mutable_spec()->mutable_metrics()->set_exact_every(0);
        ASSERT_TRUE(c.CreateSession(create).ok());
        ids.push_back(create.session_id());
      }
    } else {
      // What the killed server acknowledged is there: each session is at
      // its last acknowledged step + 1, or one further (a step applied
      // whose reply the kill cut off, which the test then never saw).
      for (int i = 0; i < kSessions; ++i) {
        const auto info = c.GetSession(ids[i]);
        ASSERT_TRUE(info.ok()) << info.status();
        ASSERT_TRUE(info->next_t() == next[i] || info->next_t() == next[i] + 1)
            << ids[i] << ": next_t " << info->next_t() << ", acknowledged up to " << next[i] - 1;
        next[i] = info->next_t();
        // The stored cache is the one the killed server kept (its keep),
        // trimmed at load to this run's keep if that is shorter.
        const int64_t newest = next[i] - 1;
        const int window = std::min(previous_keep, keep);
        for (int64_t t = newest; t > newest - window; --t) {
          v1::StepReply reply;
          const grpc::Status s = RawStep(c, RequestFor(f, ids[i], t), &reply);
          ASSERT_TRUE(s.ok()) << ids[i] << " retry of step " << t << ": " << s.error_message();
          EXPECT_TRUE(reply.replayed()) << ids[i] << " t " << t;
          reply.set_replayed(false);
          const auto it = acked[i].find(t);
          if (it != acked[i].end()) {
            EXPECT_EQ(reply.SerializeAsString(), it->second) << ids[i] << " t " << t;
          }
        }
        v1::StepReply reply;
        const grpc::Status s = RawStep(c, RequestFor(f, ids[i], newest - window), &reply);
        EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION)
            << ids[i] << " step " << newest - window << " is older than the cache";
        EXPECT_THAT(s.error_message(), HasSubstr("no longer in the reply cache"));
      }
    }
    if (run + 1 == keeps.size()) break;
    // The sessions step concurrently (their writes share commits) until
    // the kill: once each took at least `steps` steps in this run (more
    // than keep, so that every cache is full and trimmed to this keep).
    const int steps = keep + 1 + static_cast<int>(rng() % 30);
    std::mutex mu;
    std::condition_variable cv;
    std::vector<int> taken(kSessions, 0);
    std::atomic<bool> killed{false};
    std::vector<std::thread> streams;
    for (int i = 0; i < kSessions; ++i) {
      streams.emplace_back([&, i] {
        client::Client own(copt);
        while (!killed.load()) {
          v1::StepReply reply;
          const grpc::Status s = RawStep(own, RequestFor(f, ids[i], next[i]), &reply);
          if (!s.ok()) return;  // the kill
          std::lock_guard<std::mutex> lock(mu);
          acked[i][next[i]] = reply.SerializeAsString();
          ++next[i];
          ++taken[i];
          cv.notify_all();
        }
      });
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        for (int n : taken) {
          if (n < steps) return false;
        }
        return true;
      });
    }
    server->Stop(SIGKILL);
    killed = true;
    for (std::thread& t : streams) t.join();
    previous_keep = keep;
  }
}

}  // namespace
}  // namespace f2obo
