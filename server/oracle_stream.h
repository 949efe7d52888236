// The server's side of an oracle family (core/bilevel/families/oracle_family.h):
// the Oracle that asks the OracleSteps stream's client (proto:
// OracleClientMessage).  The round runs on the stream's handler thread;
// each Evaluate writes one request with every query of the family call and
// blocks in Read for the client's answers.
//
// Waiting is bounded: while a Read is outstanding a watchdog thread looks
// every few ms at the call (deadline, cancellation), the server's shutdown,
// a Delete of the session and the per-round budget (a CallRoundControl of
// its own); when one says
// stop, it writes an `error` message with the reason and cancels the call,
// which ends the Read.  So a silent client holds its session no longer than
// the round budget or its deadline, and never holds a shutdown.
//
// Points: each distinct x or y asked at is sent once per stream and named
// by id afterwards; the most recently used points are remembered (a point
// asked again while remembered costs its id), at most kCapacity of them and
// at most two of y's size besides small ones (a copy of each is kept to
// recognize it: at 10^7 parameters each costs 80 MB), the least recently
// used one is forgotten in the request that evicts it.
//
// Messages: one Evaluate is one request when its points and its answers
// fit a message (--max_message_bytes) each; else its queries are asked in
// several requests, each as large as fits (a model of 5 x 10^6 parameters:
// 40 MB per vector, an F2OBO inner iteration's three gradients in two).
// A single query that cannot fit is refused with RESOURCE_EXHAUSTED naming
// the flag (sessions are refused at create before that:
// CheckOracleMessages).
//
// Thread-safety: Evaluate and Detach on the handler thread only; the
// watchdog writes only while the handler thread is blocked in Read (gRPC
// allows one reader and one writer at a time).
#ifndef F2OBO_SERVER_ORACLE_STREAM_H_
#define F2OBO_SERVER_ORACLE_STREAM_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/family_config.h"
#include "core/oracle.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "server/call_round_control.h"
#include "server/oracle_message_limits.h"

namespace f2obo::server {

using OracleStream = grpc::ServerReaderWriter<v1::OracleServerMessage, v1::OracleClientMessage>;

// Bounds an oracle stream's Reads (see above).  One per stream.
class OracleWatchdog {
 public:
  OracleWatchdog(grpc::ServerContext* ctx, OracleStream* stream);
  ~OracleWatchdog();  // stops and joins its thread
  OracleWatchdog(const OracleWatchdog&) = delete;
  OracleWatchdog& operator=(const OracleWatchdog&) = delete;

  // A Read is about to block; `control` says when it must stop (owned by
  // the caller, alive until Disarm).
  void Arm(CallRoundControl* control);
  // The Read returned: OK, or the status the watchdog stopped it with.
  absl::Status Disarm();

 private:
  void Run();

  grpc::ServerContext* const ctx_;
  OracleStream* const stream_;
  // Waits (Await) re-check their conditions whenever mu_ is released, so
  // no change below needs a signal.
  absl::Mutex mu_;
  // Stops the armed Read: tells the client why, then cancels the call
  // unless the client ends it within kGrace.  Releases mu_ while it writes;
  // holds it again on return.
  void Fire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CallRoundControl* armed_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status fired_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // the error is being written
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// What a stream remembers across its steps: ids and the points its
// client holds (oldest first).
struct OraclePoints {
  static constexpr size_t kCapacity = 8;  // >= the 6 new points one request can hold
  uint64_t next_id = 1;                   // points' and queries' ids
  std::deque<std::pair<uint64_t, std::vector<double>>> held;
  size_t held_bytes = 0;  // of the values in `held`
  // The id of a held point with exactly these values, or 0.
  uint64_t Held(absl::Span<const double> values) const;
};

class StreamOracle final : public Oracle {
 public:
  struct Shape {
    int x_dim = 0;
    int y_dim = 0;
    int64_t t = 0;  // for messages
    // The server's --max_message_bytes: a round's queries are split into
    // requests that fit it (Evaluate); a single query beyond it is refused
    // (the round discarded) rather than failing in the transport.
    int64_t max_message_bytes = INT64_MAX;
  };
  // All pointers must outlive the step (until Detach); `session_stop` is
  // the session's own stop request (its Delete stops the wait too).
  StreamOracle(grpc::ServerContext* ctx, OracleStream* stream, OracleWatchdog* watchdog,
               const RoundStopFlags* stops, std::shared_ptr<const std::atomic<bool>> session_stop,
               double budget_seconds, Shape shape, OraclePoints* points);

  absl::Status Evaluate(absl::Span<OracleQuery> queries) override;
  // The step is over: later Evaluates fail (the step's data may be kept by
  // the metrics pipeline after the stream is gone).
  void Detach() { stream_ = nullptr; }

 private:
  // Asks `queries` in one request.
  absl::Status Ask(absl::Span<OracleQuery> queries);
  // The id of the point with these values: a remembered one, or a new one
  // added to `request` (evicting the least recently used ones this request
  // does not name into its `forget`).
  uint64_t PointId(absl::Span<const double> values, v1::OracleRequest* request);
  // Whether `id` is named by the request being built.
  bool InRequest(uint64_t id) const;
  absl::Status Receive(v1::OracleAnswers* answers, uint64_t first_query, size_t count);
  absl::Status Fill(const v1::OracleAnswers& answers, uint64_t first_query,
                    absl::Span<OracleQuery> queries) const;

  grpc::ServerContext* const ctx_;
  OracleStream* stream_;
  OracleWatchdog* const watchdog_;
  const std::shared_ptr<const std::atomic<bool>> session_stop_;
  CallRoundControl control_;
  const Shape shape_;
  OraclePoints* const points_;
  std::vector<uint64_t> in_request_;  // held points the request being built names
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_ORACLE_STREAM_H_
