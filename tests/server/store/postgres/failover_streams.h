// The client side of the shared store's failover tests and benchmark:
// streams over the three problem classes (bilevel, multi-task, simple
// bilevel) and an oracle session, each a client thread stepping one session
// t = 1, 2, ... and retrying an UNAVAILABLE step with the same t, as a
// user's client does, until it is acknowledged.  What each acknowledged step
// answered, when, and every refusal on the way are recorded; a fault-free
// reference run of the same sessions gives what they must equal, bit for
// bit.
//
// Thread-safety: StreamRun's methods may be called from the test's thread
// while its streams run; results() only after Join().
#ifndef F2OBO_TESTS_SERVER_STORE_POSTGRES_FAILOVER_STREAMS_H_
#define F2OBO_TESTS_SERVER_STORE_POSTGRES_FAILOVER_STREAMS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "core/state.h"
#include "f2obo/v1/f2obo.pb.h"
#include "tests/server/oracle_client.h"

namespace f2obo::testing {

using Clock = std::chrono::steady_clock;

struct StreamCase {
  std::string id;
  v1::SessionSpec spec;
  // Step t's request (built-in sessions); null for the oracle session.
  std::function<v1::StepRequest(const std::string& id, int64_t t)> request;
  // The oracle session's answers (null for the built-in ones).
  std::function<std::unique_ptr<Answerer>()> answerer;
};

// `n_builtin` streams over the three classes in turn (bilevel families,
// multi-task, simple bilevel) and one oracle session (the oracle twin of a
// bilevel family), ids "<prefix>-<i>".  `probe`: a server on which the
// oracle session's built-in twin is created once, to learn its dimensions.
absl::StatusOr<std::vector<StreamCase>> FailoverStreams(const std::string& prefix, int n_builtin,
                                                        client::Client& probe);

// One acknowledged step.
struct Ack {
  v1::StepReply reply;
  Clock::time_point sent;  // when the attempt that was acknowledged started
  Clock::time_point at;    // when its reply arrived
};

struct StreamResult {
  std::vector<Ack> acks;  // acks[t - 1]: step t
  int refused = 0;        // attempts answered UNAVAILABLE, then retried
  std::string failure;    // "" when every step was acknowledged
};

class StreamRun {
 public:
  // Streams of `cases`, `steps` steps each; stream i talks to target_of(i)
  // (a proxy, or the replica holding its session).
  StreamRun(std::vector<StreamCase> cases, std::function<std::string(int)> target_of,
            int64_t steps);
  ~StreamRun();  // joins the streams
  StreamRun(const StreamRun&) = delete;
  StreamRun& operator=(const StreamRun&) = delete;

  // Creates every session (through target_of(i)).
  absl::Status CreateSessions();
  void Start();
  // Asks every stream to end after the step it is at (a benchmark's
  // endless streams); Join() waits for them.
  void Stop() { stop_ = true; }
  void Join();

  // Waits until `total` steps are acknowledged over all streams, a stream
  // has failed, every stream has ended, or `timeout` passes; the total
  // acknowledged.
  int64_t AwaitTotal(int64_t total, std::chrono::milliseconds timeout);
  // Per stream: the last acknowledged t, and how many attempts were refused.
  std::vector<int64_t> Acknowledged() const;
  std::vector<int> Refused() const;
  // "" while no stream has failed, else the first failure ("<id>: why").
  std::string Failure() const;
  // Waits until every stream still running has acknowledged a step after
  // `since` (per stream, from Acknowledged()); false on timeout or once a
  // stream failed.
  bool AwaitEachBeyond(const std::vector<int64_t>& since, std::chrono::milliseconds timeout);
  // Waits until every stream still running has had an attempt refused
  // since `since` (per stream, from Refused()); false on timeout or once
  // a stream failed.
  bool AwaitEachRefused(const std::vector<int>& since, std::chrono::milliseconds timeout);

  const std::vector<StreamCase>& cases() const { return cases_; }
  int64_t steps() const { return steps_; }
  const std::vector<StreamResult>& results() const { return results_; }

 private:
  void Drive(int i);
  // Waits until done() or a stream failed; done() and no failure.
  template <typename Done>
  bool Await(Done done, std::chrono::milliseconds timeout);
  std::string FailureLocked() const;

  const std::vector<StreamCase> cases_;
  const std::function<std::string(int)> target_of_;
  const int64_t steps_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<StreamResult> results_;  // guarded by mu_ while running
  std::vector<bool> ended_;            // guarded by mu_
  int64_t total_ = 0;                  // guarded by mu_
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// The fault-free run: the same sessions stepped `steps` times, in turn, on
// the one server `c` talks to (the server must not hold them yet).
struct Reference {
  std::vector<std::vector<v1::StepReply>> replies;  // [stream][t - 1]
  std::vector<Checkpoint> states;                   // each session's final state
};
absl::StatusOr<Reference> RunReference(client::Client& c, const std::vector<StreamCase>& cases,
                                       int64_t steps);

// "" when every stream of `run` finished and each acknowledged reply and
// each session's final state (exported through target_of(i), as the
// streams' own) equal the reference's bit for bit; else what differs.
std::string CompareWithReference(const StreamRun& run, const Reference& ref,
                                 const std::function<std::string(int)>& target_of);

// Session `id`'s state as `c` exports it.
absl::StatusOr<Checkpoint> ExportedState(client::Client& c, const std::string& id);

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_STORE_POSTGRES_FAILOVER_STREAMS_H_
