// The server's side of an oracle family (core/bilevel/families/oracle_family.h):
// the Oracle that asks the OracleSteps stream's client (proto:
// OracleClientMessage).  The round runs on the stream's handler thread;
// each Evaluate writes one request with every query of the family call and
// blocks in Read for the client's answers.
//
// Points: each distinct x or y asked at is sent once per stream and named
// by id afterwards; the most recently used points are remembered (a point
// asked again while remembered costs its id), at most kCapacity of them and
// at most two of y's size besides small ones (a copy of each is kept to
// recognize it: at 10^7 parameters each costs 80 MB), the least recently
// used one is forgotten in the request that evicts it.  A client that
// speaks the recipe protocol (server/oracle_recipes.h) gets each new y-sized
// point as a recipe over what it holds instead, and its fused answers.
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

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/family_config.h"
#include "core/oracle.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "server/call_round_control.h"
#include "server/oracle_message_limits.h"
#include "server/oracle_recipes.h"
#include "server/oracle_watchdog.h"

namespace f2obo::server {

// What a stream remembers across its steps: ids and the points its
// client holds (oldest first).
struct OraclePoints {
  static constexpr size_t kCapacity = 8;  // >= the 6 new points one request can hold
  uint64_t next_id = 1;                   // points' and queries' ids
  std::deque<std::pair<uint64_t, std::vector<double>>> held;
  size_t held_bytes = 0;  // of the values in `held`
  // The id of a held point with exactly these values, or 0.
  uint64_t Held(absl::Span<const double> values) const;
  // Recipe clients: the y-sized answers the client keeps (keep_y) from the
  // last Evaluate, usable by the next one's recipes.  Not copies: the
  // round's vectors that received them and a hash of their bytes then; a
  // recipe names one only while the hash still matches, and never after
  // its step (StreamOracle::Detach drops the vectors).
  struct Kept {
    uint64_t id = 0;
    const Vector* values = nullptr;
    size_t hash = 0;
  };
  std::vector<Kept> kept;
  // The y of a step's `done` (service_oracle.cc): the id of a held point
  // with these values, or the values (a recipe client keeps them under a
  // new id, known here by a fingerprint: `named`).
  void NameDone(absl::Span<const double> values, bool recipes, v1::OraclePoint* out);
  // The step is over (applied or not): no copy of a large point is kept
  // until the next one.  A large held point named by this step's `done`
  // is then known by its fingerprint only; the others, and the
  // fingerprints of earlier steps, are forgotten (told to the client in
  // the next request).  So between steps an oracle session holds its
  // state and no copy of y (docs/oracle-protocol.md, "Memory"); the next
  // step's first request sends z_t by values (8 y_dim bytes), the price
  // of not keeping the client's z.
  void EndStep();

  // A point the client holds whose values this server does not keep (a
  // done's y, equal to the session's y): recognized by a few entries and
  // a hash of all its bytes, the hash computed only when the entries match.
  struct Named {
    uint64_t id = 0;
    size_t size = 0;
    std::array<double, 4> probe{};  // entries 0, n/3, 2n/3, n-1
    size_t hash = 0;
    bool Matches(absl::Span<const double> values) const;
  };
  std::vector<Named> named;
  std::vector<uint64_t> done_ids;  // named by this step's done
  std::vector<uint64_t> forget;    // to tell the client in the next request
  // Points of more doubles than this are not kept between steps.
  static constexpr size_t kSmallPoint = 4096;
  // The storage of a large point evicted during the step, reused for the
  // next new one (a y-sized vector's pages are faulted in once a step, not
  // once a point); freed at EndStep.
  std::vector<double> spare;
};

// A hash of v's bytes (whether a kept answer is still what the client keeps).
size_t VectorHash(const Vector& v);

// How long before the server's own clock reaches a call's deadline a read
// can already have been ended by it: the client's timer fires at the
// deadline it set, while the server's copy (the grpc-timeout header added
// to the call's arrival) is later by the request's transit, so a read the
// deadline ended usually ends just before the server's deadline.  100 ms:
// far above a loopback or LAN transit, far below the deadline a round with
// an oracle is given.
inline constexpr std::chrono::milliseconds kDeadlineTransit{100};

// Why a read of the client's answers to `asked` (the queries' range)
// ended without a message at `now`: DEADLINE_EXCEEDED at or after
// `deadline`, or a cancellation within kDeadlineTransit before it; else
// CANCELLED if the call was (`cancelled`), else INVALID_ARGUMENT (the
// client closed the stream itself).
absl::Status EndedRead(std::chrono::system_clock::time_point now,
                       std::chrono::system_clock::time_point deadline, bool cancelled,
                       const std::string& asked);

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
    // The client speaks the recipe protocol (OracleStepOpen.recipes; only
    // for the bilevel "oracle" family): y-sized points by recipe
    // (server/oracle_recipes.h), fused queries asked as such.  Else a
    // fused query is asked as f's and g's gradients, summed here.
    bool recipes = false;
    // The client answers its gradients as float32 (OracleStepOpen.float32,
    // OracleAnswer's *_f32 fields), widened here: the round stays float64.
    bool float32 = false;
  };
  // All pointers must outlive the step (until Detach); `session_stop` is
  // the session's own stop request (its Delete stops the wait too).
  StreamOracle(grpc::ServerContext* ctx, OracleStream* stream, OracleWatchdog* watchdog,
               const RoundStopFlags* stops, std::shared_ptr<const std::atomic<bool>> session_stop,
               double budget_seconds, Shape shape, OraclePoints* points);

  absl::Status Evaluate(absl::Span<OracleQuery> queries) override;
  // The step is over: later Evaluates fail (the step's data may be kept by
  // the metrics pipeline after the stream is gone), and no later recipe
  // names this step's vectors.
  void Detach();

 private:
  // Old clients: each fused query asked as f's and g's gradients in y (g's
  // merged into a query of g at the same point when there is one), summed
  // here as the core sums them.
  absl::Status EvaluateExpanded(absl::Span<OracleQuery> queries);
  // The queries in as few requests as fit a message each.
  absl::Status EvaluateGroups(absl::Span<OracleQuery> queries);
  // Asks `queries` in one request (`last`: the Evaluate's last).
  absl::Status Ask(absl::Span<OracleQuery> queries, bool last);
  // The id of the point with these values: a remembered one, a recipe
  // (recipe clients, y-sized points), or a new one added to `request`.
  uint64_t PointId(absl::Span<const double> values, v1::OracleRequest* request);
  // Recipe clients: a held point within kRecipeTolerance of `values`, or a
  // new one by recipe added to `request`; 0 if neither.
  uint64_t RecipeId(absl::Span<const double> values, v1::OracleRequest* request);
  // Forgets the least recently used held points this request does not
  // name, beyond the stream's budget (two points of y's size).
  void Evict(v1::OracleRequest* request);
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
  // Recipe clients: the kept answers this Evaluate's recipes may name; the
  // ids of the last Evaluate's kept answers, forgotten in this one's last
  // request; the answers this request's queries keep.
  std::vector<OraclePoints::Kept> terms_;
  std::vector<RecipeTerm> term_entries_;  // terms_'s vectors and largest entries
  std::vector<uint64_t> stale_;
  std::vector<std::pair<uint64_t, const Vector*>> keep_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_ORACLE_STREAM_H_
