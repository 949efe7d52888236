#include "server/call_round_control.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/options.h"

namespace f2obo::server {
namespace {

// How often the clocks and flags are looked at, in round time.
constexpr auto kLookEvery = std::chrono::microseconds(50);
constexpr int64_t kMaxStride = 4096;

CallRoundControl::Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<CallRoundControl::Clock::duration>(
      std::chrono::duration<double>(s));
}

// "inner_steps, max_inner_iterations, ...": core/options.def's iteration
// counts, the options that lengthen a round.
std::string IterationOptionNames() {
  std::vector<std::string> names;
  for (Opt id : IterationOptions()) names.push_back(GetOptionInfo(id).name);
  return absl::StrJoin(names, ", ");
}

}  // namespace

CallRoundControl::CallRoundControl(const grpc::ServerContext* call, const RoundStopFlags* server,
                                   double budget_seconds)
    : call_(call),
      server_(server),
      // Beyond ~100 years a budget is none (and would overflow the clock).
      has_budget_(budget_seconds > 0.0 && budget_seconds < 3e9),
      budget_seconds_(budget_seconds),
      start_(Clock::now()),
      budget_end_(has_budget_ ? start_ + Seconds(budget_seconds) : Clock::time_point::max()),
      deadline_(call != nullptr ? call->deadline() : std::chrono::system_clock::time_point::max()),
      last_look_(start_),
      next_cancel_look_(start_ + kCancelLookEvery) {}

absl::Status CallRoundControl::Check() {
  if (!stopped_.ok()) return stopped_;
  if (--countdown_ > 0) return absl::OkStatus();
  const Clock::time_point now = Clock::now();
  // Adapt the stride: calls come faster than kLookEvery -> look less often.
  if (now - last_look_ < kLookEvery) {
    stride_ = std::min(stride_ * 2, kMaxStride);
  } else if (now - last_look_ > 4 * kLookEvery) {
    stride_ = std::max<int64_t>(stride_ / 2, 1);
  }
  countdown_ = stride_;
  last_look_ = now;
  stopped_ = Look(now);
  return stopped_;
}

absl::Status CallRoundControl::CheckNow() {
  if (stopped_.ok()) stopped_ = Look(Clock::now());
  return stopped_;
}

absl::Status CallRoundControl::Look(Clock::time_point now) {
  if (session_stop_ != nullptr && session_stop_->load(std::memory_order_relaxed)) {
    return absl::AbortedError("the session is being deleted; round stopped");
  }
  if (server_ != nullptr && server_->shutdown.load(std::memory_order_relaxed)) {
    return absl::UnavailableError(
        "server is shutting down and its grace period is over; round stopped");
  }
  if (call_ != nullptr) {
    if (std::chrono::system_clock::now() >= deadline_) {
      return absl::DeadlineExceededError("the client's deadline passed; round stopped");
    }
    if (now >= next_cancel_look_) {  // (see kCancelLookEvery)
      next_cancel_look_ = now + kCancelLookEvery;
      if (call_->IsCancelled()) {
        return absl::CancelledError("the client cancelled the call; round stopped");
      }
    }
  }
  if (now >= budget_end_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the round ran for the per-round budget of ", budget_seconds_,
                     " s (--round_budget_seconds) and was stopped; lower the inner "
                     "iterations (",
                     IterationOptionNames(), ") or the batch size, or raise the budget"));
  }
  return absl::OkStatus();
}

}  // namespace f2obo::server
