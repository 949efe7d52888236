#include "server/oracle_watchdog.h"

#include <chrono>
#include <string>

#include "absl/strings/str_cat.h"

namespace f2obo::server {
namespace {

// How often a blocked Read's stop conditions are looked at, and how long a
// stopped client may take to end the call itself before it is cancelled.
constexpr auto kPoll = std::chrono::milliseconds(10);
constexpr auto kGrace = std::chrono::seconds(1);

}  // namespace

OracleWatchdog::OracleWatchdog(grpc::ServerContext* ctx, OracleStream* stream)
    : ctx_(ctx), stream_(stream), thread_([this] { Run(); }) {}

OracleWatchdog::~OracleWatchdog() {
  {
    absl::MutexLock lock(&mu_);
    quit_ = true;
  }
  thread_.join();
}

void OracleWatchdog::Arm(CallRoundControl* control) {
  absl::MutexLock lock(&mu_);
  armed_ = control;
  fired_ = absl::OkStatus();
}

absl::Status OracleWatchdog::Disarm() {
  absl::MutexLock lock(&mu_);
  armed_ = nullptr;
  return fired_;
}

void OracleWatchdog::Run() {
  absl::MutexLock lock(&mu_);
  const auto armed_or_quit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return quit_ || (armed_ != nullptr && fired_.ok());
  };
  const auto disarmed_or_quit = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return quit_ || armed_ == nullptr || !fired_.ok();
  };
  while (!quit_) {
    if (armed_ == nullptr || !fired_.ok()) {
      mu_.Await(absl::Condition(&armed_or_quit));
      continue;
    }
    mu_.AwaitWithTimeout(absl::Condition(&disarmed_or_quit), absl::FromChrono(kPoll));
    if (quit_ || armed_ == nullptr || !fired_.ok()) continue;
    // The handler thread is blocked in Read: only this thread uses armed_.
    absl::Status stop = armed_->CheckNow();
    if (stop.ok()) continue;
    fired_ = absl::Status(stop.code(), absl::StrCat(stop.message(),
                                                    " while waiting for the client's answers; "
                                                    "round discarded, session unchanged"));
    Fire();
  }
}

void OracleWatchdog::Fire() {
  v1::OracleServerMessage error;
  error.mutable_error()->set_code(static_cast<int>(fired_.code()));
  error.mutable_error()->set_message(std::string(fired_.message()));
  writing_ = true;
  mu_.Unlock();
  // A client that reads nothing any more can block the write: cancel then.
  std::thread guard([this] {
    absl::MutexLock l(&mu_);
    const auto written = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !writing_; };
    if (!mu_.AwaitWithTimeout(absl::Condition(&written), absl::FromChrono(kGrace))) {
      ctx_->TryCancel();
    }
  });
  stream_->Write(error);
  mu_.Lock();
  writing_ = false;
  mu_.Unlock();
  guard.join();
  mu_.Lock();
  // The client may end the call itself once it read why; else cut it off.
  const auto ended = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return armed_ == nullptr || quit_; };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ended), absl::FromChrono(kGrace))) {
    ctx_->TryCancel();
  }
}

}  // namespace f2obo::server
