#include "client/cli/reconnects.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "client/cli/cli.h"

namespace f2obo::cli {

Reconnects::Reconnects()
    : max_attempts_(std::max(1, absl::GetFlag(FLAGS_max_attempts))),
      moved_seconds_(std::max(0.0, absl::GetFlag(FLAGS_moved_retry_seconds))) {}

void Reconnects::Progressed() {
  failures_ = 0;
  backoff_ = 0.25;
  moved_since_.reset();
}

bool Reconnects::Retry(const absl::Status& s) {
  if (s.code() != absl::StatusCode::kUnavailable) return false;
  const auto now = std::chrono::steady_clock::now();
  if (client::IsMoved(s) && moved_seconds_ > 0) {
    if (!moved_since_) moved_since_ = now;
    const double waited = std::chrono::duration<double>(now - *moved_since_).count();
    if (waited + backoff_ <= moved_seconds_) {
      std::fprintf(stderr,
                   "f2obo-cli: stream: %s; reconnecting (moved: retried for %.1f s of "
                   "--moved_retry_seconds=%g)\n",
                   std::string(s.message()).c_str(), waited, moved_seconds_);
      std::this_thread::sleep_for(std::chrono::duration<double>(backoff_));  // backoff
      // Short once the move is done: the proxy switch ends the wait.
      backoff_ = std::min(2 * backoff_, 1.0);
      return true;
    }
  }
  if (++failures_ >= max_attempts_) return false;
  std::fprintf(stderr, "f2obo-cli: stream: UNAVAILABLE: %s; reconnecting (attempt %d of %d)\n",
               std::string(s.message()).c_str(), failures_ + 1, max_attempts_);
  std::this_thread::sleep_for(std::chrono::duration<double>(backoff_));  // backoff
  backoff_ = std::min(2 * backoff_, 8.0);
  return true;
}

}  // namespace f2obo::cli
