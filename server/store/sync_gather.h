// Commit gathering for the store's writer under kSync (issue 23): how many
// waited writes to let arrive before a commit, and until when.
//
// Under kSync every step waits for its commit, and each commit pays one
// fdatasync: on this project's 2-core VM most of the writer's CPU and, on
// a busy disk, milliseconds.  Left alone the writer takes whatever is
// queued the moment it is free, and 8 closed-loop streams split into two
// groups that alternate (3-4 steps a commit): each group's steps arrive
// while the other's commit runs.  Gathering lets the writer wait for the
// streams it just served to come back, so that one commit serves them all
// (cf. PostgreSQL's commit_delay, MySQL's binlog_group_commit_sync_delay;
// here without a knob):
//  - a session is expected if it was in one of the last two commits and
//    its previous step came back within kMaxWait of the commit before it
//    (a closed-loop stream; a session's next step always waits for its
//    previous one's commit, so it is in every commit at most once);
//  - the writer waits until every expected session has a write queued, or
//    kMaxWait after the previous commit ended, whichever is first;
//  - a wait that ran out with none of them come (a client stepping its
//    sessions one after another, streams that stopped) stops the gathering
//    for the next 2, 4, ..., 64 commits, so that a pattern that does not
//    gather costs at most ~kMaxWait / 64 a commit; one where some came
//    saved a commit and goes on.
// A lone session never waits: with nothing else expected there is nothing
// to gather.  The bound on an expected stream's lateness is kMaxWait.
#ifndef F2OBO_SERVER_STORE_SYNC_GATHER_H_
#define F2OBO_SERVER_STORE_SYNC_GATHER_H_

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace f2obo::server::store_detail {

class SyncGather {
 public:
  // The longest wait, and the longest return of a session still expected.
  static constexpr absl::Duration kMaxWait = absl::Milliseconds(1);
  // The longest pause after waits that ran out (in commits).
  static constexpr int kMaxSkip = 64;

  struct Plan {
    int want = 0;                             // waited writes to gather; 0: none
    absl::Time until = absl::InfinitePast();  // and not past this
  };
  // What to gather before the next commit.
  Plan Next() const;
  // After a commit durable at `done`: the waited writes it held (their
  // sessions and when each was queued), the plan it followed, and how many
  // waited writes were queued when it started and when it stopped waiting.
  void Committed(const std::vector<std::pair<std::string, absl::Time>>& writes, absl::Time done,
                 const Plan& plan, int queued, int gathered);

  int skip() const { return skip_; }  // tests

 private:
  struct Seen {
    absl::Time done;    // the end of the last commit that held its write
    bool fast = false;  // its last write came within kMaxWait of the one before's commit
  };
  // The sessions of the last two commits (the only ones tracked).
  std::unordered_map<std::string, Seen> seen_;
  std::vector<std::string> last_, before_;  // sorted, distinct
  absl::Time last_done_ = absl::InfinitePast();
  int misses_ = 0;  // waits in a row that ran out with nothing come
  int skip_ = 0;    // commits left that do not gather
};

}  // namespace f2obo::server::store_detail

#endif  // F2OBO_SERVER_STORE_SYNC_GATHER_H_
