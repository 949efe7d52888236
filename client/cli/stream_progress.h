// Progress of `f2obo-cli stream`: one updating line on a terminal, else a
// line every --print_every steps (and at the first and last step, and at
// least every few seconds so slow steps never look like a hang).  A session
// stream and a group stream share the cadence and the window statistics;
// only what a line says about the rounds differs.
#ifndef F2OBO_CLIENT_CLI_STREAM_PROGRESS_H_
#define F2OBO_CLIENT_CLI_STREAM_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::cli {

// The last --print_every rounds of one session: prequential loss and
// accuracy are their means.
class RecentRounds {
 public:
  explicit RecentRounds(int size) : size_(size) {}
  void Add(const v1::RoundReport& r);
  double MeanLoss() const;
  std::string MeanAccuracy() const;  // "-" when no round reported one

 private:
  int size_;
  std::deque<v1::RoundReport> rounds_;
};

// What the two progress kinds share: counting, cadence, the line's head.
class ProgressLine {
 public:
  // Prints every `every` steps off a terminal (--print_every).
  ProgressLine(int64_t first, int64_t last, int every);
  virtual ~ProgressLine() = default;

  // Ends an unfinished terminal line (before an error or reconnect message).
  void Break();
  double Seconds() const;
  int64_t done() const { return done_; }

 protected:
  // Counts step t, then prints Line(t) if the cadence says so.
  void Count(int64_t t);
  virtual std::string Line(int64_t t) const = 0;
  // "step t (done/total)  r steps/s"
  std::string Head(int64_t t) const;
  int every() const { return every_; }

 private:
  using Clock = std::chrono::steady_clock;
  const int64_t first_, last_;
  const bool tty_;
  const int every_;
  const Clock::time_point start_;
  Clock::time_point last_print_;
  int64_t done_ = 0;
};

// A session's stream: loss, accuracy, and lambda with BLReg (bilevel and
// multi-task) or the inner and outer gaps (simple bilevel).
class Progress : public ProgressLine {
 public:
  Progress(int64_t first, int64_t last, int every)
      : ProgressLine(first, last, every), window_(ProgressLine::every()) {}
  void Update(const v1::StepReply& r);

 private:
  std::string Line(int64_t t) const override;

  RecentRounds window_;
  double lambda_ = 0;
  std::string blreg_ = "-";
  bool simple_ = false;
  std::string inner_gap_ = "-", outer_gap_ = "-";
};

// A group's stream: one entry per member (loss, accuracy, latest BLReg).
class GroupProgress : public ProgressLine {
 public:
  GroupProgress(int64_t first, int64_t last, int every, const std::string& group)
      : ProgressLine(first, last, every), prefix_(group + ".") {}
  void Update(const v1::GroupStepReply& r);

 private:
  struct Member {
    std::string name;
    RecentRounds window;
    std::string blreg = "-";
  };
  std::string Line(int64_t t) const override;

  const std::string prefix_;
  std::vector<Member> members_;
};

// A group step's first failed member, as a status naming it; OK when every
// member applied the step.
absl::Status MemberFailure(const v1::GroupStepReply& r);

}  // namespace f2obo::cli

#endif  // F2OBO_CLIENT_CLI_STREAM_PROGRESS_H_
