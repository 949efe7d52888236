// kSync's commit gathering (server/store/sync_gather.h): which sessions the
// writer waits for, until when, and when it stops waiting.
#include "server/store/sync_gather.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace f2obo::server::store_detail {
namespace {

using Writes = std::vector<std::pair<std::string, absl::Time>>;

const absl::Time kT0 = absl::FromUnixSeconds(1000);

absl::Time At(double micros) { return kT0 + absl::Microseconds(micros); }

// Sessions `first`..`last` (s<i>), each queued at `queued`.
Writes Sessions(int first, int last, absl::Time queued) {
  Writes w;
  for (int i = first; i <= last; ++i) w.emplace_back("s" + std::to_string(i), queued);
  return w;
}

// A commit that followed `plan` with nothing to wait for.
void Commit(SyncGather& g, const Writes& w, absl::Time done) {
  const SyncGather::Plan plan = g.Next();
  const int n = static_cast<int>(w.size());
  g.Committed(w, done, plan, n, n);
}

TEST(SyncGatherTest, ALoneSessionNeverWaits) {
  SyncGather g;
  for (int i = 0; i < 10; ++i) {
    EXPECT_LE(g.Next().want, 1);  // <= 1: the writer has it queued already
    Commit(g, Sessions(1, 1, At(100 * i)), At(100 * i + 50));
  }
}

TEST(SyncGatherTest, ClosedLoopStreamsAreAllWaitedForUntilOneMaxWaitAfterTheCommit) {
  SyncGather g;
  EXPECT_EQ(g.Next().want, 0);  // nothing known yet
  Commit(g, Sessions(1, 8, At(0)), At(100));
  // First sight: how fast they come back is not known yet.
  EXPECT_EQ(g.Next().want, 0);
  Commit(g, Sessions(1, 8, At(300)), At(400));
  const SyncGather::Plan p = g.Next();
  EXPECT_EQ(p.want, 8);
  EXPECT_EQ(p.until, At(400) + SyncGather::kMaxWait);
}

TEST(SyncGatherTest, TwoAlternatingGroupsAreGatheredIntoOne) {
  // The split 8 streams fall into without gathering: 3 and 5, alternating.
  SyncGather g;
  Commit(g, Sessions(1, 3, At(0)), At(100));
  Commit(g, Sessions(4, 8, At(50)), At(200));
  Commit(g, Sessions(1, 3, At(150)), At(300));
  Commit(g, Sessions(4, 8, At(250)), At(400));
  // Both groups came back within kMaxWait of their previous commit.
  EXPECT_EQ(g.Next().want, 8);
}

TEST(SyncGatherTest, ASessionSlowerThanMaxWaitIsNotWaitedFor) {
  SyncGather g;
  const double slow = absl::ToDoubleMicroseconds(SyncGather::kMaxWait) + 1;
  Commit(g, Sessions(1, 4, At(0)), At(100));
  Writes w = Sessions(1, 3, At(200));
  w.emplace_back("s4", At(100 + slow));  // s4: a long round between steps
  Commit(g, w, At(200 + slow));
  EXPECT_EQ(g.Next().want, 3);
}

TEST(SyncGatherTest, AStoppedStreamIsForgottenAfterTwoCommits) {
  SyncGather g;
  Commit(g, Sessions(1, 4, At(0)), At(100));
  Commit(g, Sessions(1, 4, At(150)), At(200));
  EXPECT_EQ(g.Next().want, 4);
  // s4 stopped; the wait for it got s1-s3 (they came: not a miss).
  SyncGather::Plan p = g.Next();
  g.Committed(Sessions(1, 3, At(250)), At(300 + 1000), p, 1, 3);
  EXPECT_EQ(g.skip(), 0);
  p = g.Next();
  EXPECT_EQ(p.want, 4);  // s4 still in the commit before
  g.Committed(Sessions(1, 3, At(1350)), At(1400 + 1000), p, 1, 3);
  EXPECT_EQ(g.skip(), 0);
  EXPECT_EQ(g.Next().want, 3);
}

TEST(SyncGatherTest, WaitsThatGainNothingPauseTheGatheringLongerEachTime) {
  // One client stepping two sessions one after another: each commit holds
  // one step, and the session the writer expects cannot come while the
  // client waits for this commit.  Each wait runs out; the pauses after
  // them double up to kMaxSkip commits.
  SyncGather g;
  absl::Time now = At(0);
  std::vector<int> waited_at;
  for (int i = 0; i < 400; ++i) {
    const SyncGather::Plan p = g.Next();
    const Writes w = Sessions(i % 2 + 1, i % 2 + 1, now + absl::Microseconds(20));
    now += absl::Microseconds(100);
    if (p.want > 1) {
      waited_at.push_back(i);
      now = p.until;  // nothing came
    }
    g.Committed(w, now, p, 1, 1);
  }
  std::vector<int> gaps;
  for (size_t k = 1; k < waited_at.size(); ++k) gaps.push_back(waited_at[k] - waited_at[k - 1]);
  // A wait, its pause of 2^k commits, then one more while the session the
  // pause left out is seen again (the first pause: two).
  const std::vector<int> expected = {4, 5, 9, 17, 33, 65, 65, 65, 65};
  ASSERT_GE(gaps.size(), expected.size());
  EXPECT_EQ(std::vector<int>(gaps.begin(), gaps.begin() + expected.size()), expected);
  EXPECT_LE(waited_at.size(), 12u) << "of 400 commits";
}

TEST(SyncGatherTest, AWaitThatGetsEveryoneEndsThePause) {
  SyncGather g;
  Commit(g, Sessions(1, 2, At(0)), At(100));
  Commit(g, Sessions(1, 2, At(150)), At(200));
  SyncGather::Plan p = g.Next();
  g.Committed(Sessions(1, 1, At(250)), At(1300), p, 1, 1);  // a miss
  ASSERT_EQ(g.skip(), 2);
  Commit(g, Sessions(1, 2, At(1350)), At(1400));
  Commit(g, Sessions(1, 2, At(1450)), At(1500));
  ASSERT_EQ(g.skip(), 0);
  p = g.Next();
  ASSERT_EQ(p.want, 2);
  g.Committed(Sessions(1, 2, At(1550)), At(1600), p, 1, 2);  // all came
  Commit(g, Sessions(1, 2, At(1650)), At(1700));
  p = g.Next();
  ASSERT_EQ(p.want, 2);
  g.Committed(Sessions(1, 1, At(1750)), At(2800), p, 1, 1);  // a miss again
  EXPECT_EQ(g.skip(), 2) << "a miss after a success starts the pauses over";
}

}  // namespace
}  // namespace f2obo::server::store_detail
