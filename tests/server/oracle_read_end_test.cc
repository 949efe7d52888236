// server/oracle_stream.h: why a read of an oracle client's answers ended.
// The client's deadline timer fires a transit time before the server's
// copy of the deadline is reached, so an end just before it is the
// deadline's, not a cancellation.
#include <gtest/gtest.h>

#include <chrono>

#include "server/oracle_stream.h"

namespace f2obo::server {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::system_clock;

TEST(OracleReadEnd, AnEndWithinTheTransitBeforeTheDeadlineIsTheDeadlines) {
  const Clock::time_point deadline = Clock::now() + std::chrono::hours(1);
  // gRPC cancels the call when its deadline passes: cancelled is true too.
  for (const Clock::duration before :
       {Clock::duration(milliseconds(2)), Clock::duration(kDeadlineTransit), Clock::duration(0)}) {
    const absl::Status s = EndedRead(deadline - before, deadline, true, "queries 0..3");
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_NE(s.message().find("queries 0..3"), absl::string_view::npos) << s;
  }
  EXPECT_EQ(EndedRead(deadline + milliseconds(5), deadline, true, "q").code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(OracleReadEnd, AnEarlierEndIsACancellationOrTheClientsClose) {
  const Clock::time_point deadline = Clock::now() + std::chrono::hours(1);
  const Clock::time_point early = deadline - kDeadlineTransit - milliseconds(1);
  EXPECT_EQ(EndedRead(early, deadline, true, "q").code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(EndedRead(early, deadline, false, "q").code(), absl::StatusCode::kInvalidArgument);
  // A close by the client just before its deadline is still its close.
  EXPECT_EQ(EndedRead(deadline - milliseconds(2), deadline, false, "q").code(),
            absl::StatusCode::kInvalidArgument);
  // No deadline at all (time_point::max()): never the deadline's.
  EXPECT_EQ(EndedRead(Clock::now(), Clock::time_point::max(), true, "q").code(),
            absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace f2obo::server
