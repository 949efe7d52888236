#include "client/cli/stream_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"

namespace f2obo::cli {
namespace {

// Off a terminal, a progress line at least this often even between every
// --print_every steps, so slow steps never look like a hang.
constexpr std::chrono::seconds kQuietLimit(5);

}  // namespace

void RecentRounds::Add(const v1::RoundReport& r) {
  rounds_.push_back(r);
  if (static_cast<int>(rounds_.size()) > size_) rounds_.pop_front();
}

double RecentRounds::MeanLoss() const {
  double loss = 0;
  for (const v1::RoundReport& r : rounds_) loss += r.upper_loss_before();
  return loss / std::max<size_t>(1, rounds_.size());
}

std::string RecentRounds::MeanAccuracy() const {
  double acc = 0;
  int with_acc = 0;
  for (const v1::RoundReport& r : rounds_) {
    if (r.has_accuracy_before()) acc += r.accuracy_before(), ++with_acc;
  }
  return with_acc > 0 ? absl::StrFormat("%.3f", acc / with_acc) : "-";
}

ProgressLine::ProgressLine(int64_t first, int64_t last, int every)
    : first_(first),
      last_(last),
      tty_(isatty(fileno(stdout)) == 1),
      every_(std::max(1, every)),
      start_(Clock::now()) {}

void ProgressLine::Break() {
  if (tty_ && done_ > 0) std::printf("\n");
}

double ProgressLine::Seconds() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::string ProgressLine::Head(int64_t t) const {
  return absl::StrFormat("step %d (%d/%d)  %.1f steps/s", t, done_, last_ - first_ + 1,
                         done_ / std::max(1e-9, Seconds()));
}

void ProgressLine::Count(int64_t t) {
  ++done_;
  const bool final = t >= last_;
  if (tty_) {
    const auto now = Clock::now();
    if (!final && now - last_print_ < std::chrono::milliseconds(100)) return;
    last_print_ = now;
    std::printf("\r\033[K%s", Line(t).c_str());
    if (final) std::printf("\n");
  } else if ((t - first_ + 1) % every_ == 0 || t == first_ || final ||
             Clock::now() - last_print_ >= kQuietLimit) {
    last_print_ = Clock::now();
    std::printf("%s\n", Line(t).c_str());
  }
  std::fflush(stdout);
}

void Progress::Update(const v1::StepReply& r) {
  window_.Add(r.report());
  lambda_ = v1::LambdaOf(r.report()).value_or(0.0);
  simple_ = r.report().has_simple();
  if (r.has_latest_exact()) {
    const v1::ExactMetrics& e = r.latest_exact();
    if (std::optional<double> blreg = v1::BlregOf(e.running())) blreg_ = Num(*blreg, 4);
    if (e.has_simple()) {
      inner_gap_ = Num(e.simple().inner_gap(), 3);
      outer_gap_ = e.simple().has_outer_gap() ? Num(e.simple().outer_gap(), 3) : "-";
    }
  }
  Count(r.t());
}

std::string Progress::Line(int64_t t) const {
  const std::string head = absl::StrFormat("%s  preq.loss %.4f  preq.acc %s", Head(t),
                                           window_.MeanLoss(), window_.MeanAccuracy());
  // Simple bilevel sessions: the optimality gaps of the decision.
  if (simple_) return absl::StrCat(head, "  inner gap ", inner_gap_, "  outer gap ", outer_gap_);
  return absl::StrCat(head, "  lambda ", Num(lambda_, 4), "  BLReg ", blreg_);
}

void GroupProgress::Update(const v1::GroupStepReply& r) {
  if (members_.size() != static_cast<size_t>(r.members_size())) {
    members_.assign(r.members_size(), Member{"", RecentRounds(every()), "-"});
  }
  for (int i = 0; i < r.members_size(); ++i) {
    const v1::MemberStepResult& m = r.members(i);
    Member& s = members_[i];
    s.name = m.session_id().rfind(prefix_, 0) == 0 ? m.session_id().substr(prefix_.size())
                                                   : m.session_id();
    s.window.Add(m.reply().report());
    if (m.reply().has_latest_exact()) {
      if (std::optional<double> blreg = v1::BlregOf(m.reply().latest_exact().running())) {
        s.blreg = Num(*blreg, 4);
      }
    }
  }
  Count(r.t());
}

std::string GroupProgress::Line(int64_t t) const {
  std::string line = Head(t);
  for (const Member& m : members_) {
    absl::StrAppendFormat(&line, "  | %s loss %.4f acc %s BLReg %s", m.name, m.window.MeanLoss(),
                          m.window.MeanAccuracy(), m.blreg);
  }
  return line;
}

absl::Status MemberFailure(const v1::GroupStepReply& r) {
  for (const v1::MemberStepResult& m : r.members()) {
    if (m.code() != 0) {
      return absl::Status(
          static_cast<absl::StatusCode>(m.code()),
          absl::StrCat("member ", m.session_id(), " at t = ", r.t(), ": ", m.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo::cli
