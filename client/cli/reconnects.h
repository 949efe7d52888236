// When a broken Steps / StepsGroup stream of `f2obo-cli stream` reconnects:
// after UNAVAILABLE, up to --max_attempts consecutive failures; after the
// "moved" status (the session's key is being rebalanced to another
// replica), for up to --moved_retry_seconds since the first such failure,
// without using up --max_attempts.  Exponential backoff in between.
#ifndef F2OBO_CLIENT_CLI_RECONNECTS_H_
#define F2OBO_CLIENT_CLI_RECONNECTS_H_

#include <chrono>
#include <optional>

#include "absl/status/status.h"

namespace f2obo::cli {

class Reconnects {
 public:
  Reconnects();  // reads --max_attempts and --moved_retry_seconds
  // The stream made progress: the counts start over.
  void Progressed();
  // Whether the stream that broke with `s` is to be reconnected; if so,
  // reports it on stderr and waits out the backoff first.
  bool Retry(const absl::Status& s);

 private:
  const int max_attempts_;
  const double moved_seconds_;
  int failures_ = 0;
  double backoff_ = 0.25;
  std::optional<std::chrono::steady_clock::time_point> moved_since_;
};

}  // namespace f2obo::cli

#endif  // F2OBO_CLIENT_CLI_RECONNECTS_H_
