// The RoundControl of a round run for an RPC (core/round_control.h): the
// round stops when the client cancels or its deadline passes, when the
// server's shutdown grace is over, when the session is being deleted, or
// when it has run for the server's per-round budget.
//
// Checking clocks and the call's state costs more than a small inner
// iteration, so Check() looks at them only every `stride` calls, a stride
// adapted so that they are looked at about every 50 us of round time
// (and at least once per call while iterations are slower than that).
// Every flag it reads is sticky, so a stop is final.
//
// Whether the client cancelled is looked at more rarely: once the round
// has run kCancelLookEvery, then at most that often (CheckNow included).
// In gRPC's sync API ServerContext::IsCancelled() polls the call's
// completion queue (a pollset pass: epoll and lock hand-offs), which cost
// ~10-50 us each on the 2-core VM, more than a tiny step's whole round;
// looked at every 50 us it was most of a tiny step's server CPU beyond a
// raw gRPC echo (bench/RESULTS.md).  So a client that cancels
// during a round shorter than kCancelLookEvery finds its step applied, as
// if it had cancelled just after the reply (a retry of that t is answered
// from the reply cache); longer rounds stop within kCancelLookEvery of a
// cancel, unapplied.  The deadline, the session's and the server's stop
// flags and the budget are cheap and still looked at every time.
//
// Thread-safety: Check() is called from the round's thread only; the flags
// it reads (RoundStopFlags) may be set from any thread.
#ifndef F2OBO_SERVER_CALL_ROUND_CONTROL_H_
#define F2OBO_SERVER_CALL_ROUND_CONTROL_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "absl/status/status.h"
#include "core/round_control.h"
#include "grpcpp/server_context.h"

namespace f2obo::server {

// Stop requests shared by many rounds: set once, never cleared.
struct RoundStopFlags {
  std::atomic<bool> shutdown{false};  // the server's shutdown grace is over
};

class CallRoundControl final : public RoundControl {
 public:
  using Clock = std::chrono::steady_clock;

  // Any pointer may be null (nothing to watch there).  `budget_seconds`
  // <= 0: no budget.  All must outlive the control.
  CallRoundControl(const grpc::ServerContext* call, const RoundStopFlags* server,
                   double budget_seconds);

  // The session's own stop request (set by a Delete of that session).
  void set_session_stop(const std::atomic<bool>* stop) { session_stop_ = stop; }

  // How often, in round time, the call's cancellation is looked at.
  static constexpr std::chrono::milliseconds kCancelLookEvery{1};

  absl::Status Check() override;
  // Check() without the stride: looks at every stop source now.
  absl::Status CheckNow();

 private:
  absl::Status Look(Clock::time_point now);

  const grpc::ServerContext* const call_;
  const RoundStopFlags* const server_;
  const std::atomic<bool>* session_stop_ = nullptr;
  const bool has_budget_;
  const double budget_seconds_;
  const Clock::time_point start_;
  const Clock::time_point budget_end_;
  // The call's deadline, read once: ServerContext::deadline() converts
  // gRPC's clock to the system clock on every call (two clock reads).
  const std::chrono::system_clock::time_point deadline_;
  Clock::time_point last_look_;
  Clock::time_point next_cancel_look_;
  int64_t stride_ = 1;
  int64_t countdown_ = 1;
  absl::Status stopped_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_CALL_ROUND_CONTROL_H_
